//! Kubernetes objects read from YAML, with the position of every field.
//!
//! Policy files, policy definitions, functionConfigs and automations are
//! read as values (`serde_json::Value`, through serde-saphyr, so anchors,
//! merge keys and YAML 1.2 scalars behave as in any Kubernetes tool), and
//! every node's line and column is kept beside them, keyed by its JSON
//! pointer. An error about `status.latestRef` of an ImagePolicy can then say
//! `policies.yaml:12:5`. The markers themselves are found by the scanner
//! (`updater::scan`), which works on the text and never builds values.
//!
//! This module is also the one place that opens `List` objects
//! ([`objects`]) and reads the identity fields every reader needs
//! ([`is_kind`], [`namespace_name`], [`labels`]).

pub(crate) mod edit;
pub(crate) mod tree;

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_saphyr::{MessageFormatter, Spanned};

use crate::text::Position;

/// One YAML document: its value, and where each of its nodes starts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Document {
    pub value: Value,
    /// 0-based index of the document in its stream.
    pub index: usize,
    /// JSON pointer (`""` for the root, `/spec/image`, `/items/0`) to the
    /// position of the node's value.
    positions: BTreeMap<String, Position>,
}

impl Document {
    /// A document without positions (built in code).
    #[must_use]
    pub fn from_value(value: Value) -> Self {
        Self {
            value,
            ..Self::default()
        }
    }

    /// [`Document::position`] when the reader keeps positions (`positions`),
    /// the file's first line and column when the node has none; `None`
    /// otherwise.
    #[must_use]
    pub(crate) fn position_if(&self, positions: bool, pointer: &str) -> Option<Position> {
        positions.then(|| {
            self.position(pointer)
                .unwrap_or(Position { line: 1, column: 1 })
        })
    }

    /// Where the node at `pointer` starts; for a pointer to a node that is
    /// absent (or behind an alias), where its nearest present ancestor
    /// starts. `None` only for a document built without positions.
    #[must_use]
    pub fn position(&self, pointer: &str) -> Option<Position> {
        let mut p = pointer;
        loop {
            if let Some(found) = self.positions.get(p) {
                return Some(*found);
            }
            if p.is_empty() {
                return None;
            }
            p = p.rfind('/').map_or("", |i| &p[..i]);
        }
    }
}

/// A text is not valid YAML (or breaks a reader's limit): the one syntax error of every YAML
/// reader (the value reader here, the [`tree`], the marker scanner). The file is the caller's
/// (a [`crate::diagnostic::Location`] names it with this position).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", position.map(|p| format!("{}:{}: ", p.line, p.column)).unwrap_or_default())]
pub struct SyntaxError {
    /// The byte offset where the parser stopped, when it knows (the tree and the scanner do).
    pub offset: Option<usize>,
    /// Where the parser stopped (1-based line and column), when it knows.
    pub position: Option<Position>,
    /// The parser's message, without any position in it.
    pub message: String,
}

impl SyntaxError {
    /// An error at byte `offset` of `text`, its position counted there.
    #[must_use]
    pub(crate) fn at(text: &str, offset: usize, message: String) -> Self {
        Self {
            offset: Some(offset),
            position: Some(crate::text::position_of(text, offset)),
            message,
        }
    }
}

/// The one rule for plain scalars in a field meant to hold a string: a plain (unquoted, untagged)
/// scalar is a string when the value reader ([`parse_values`], YAML 1.2's core schema) reads it
/// as one; `1`, `1.5`, `true` or `0x1f` are not (null is absence, decided before). Both the
/// value reader's fields ([`Document`]) and the [`tree`]'s
/// ([`tree::Tree::string_field`]) refuse the others, as the API server does for a field of
/// type string.
#[must_use]
pub(crate) fn plain_is_string(plain: &str) -> bool {
    match parse_values(plain).as_deref() {
        Ok([Value::String(_)]) => true,
        Ok([Value::Null | Value::Bool(_) | Value::Number(_)]) => false,
        // Not a lone scalar when read alone: as written, text.
        _ => true,
    }
}

/// The deepest nesting of sequences and mappings a document may have.
pub(crate) const MAX_DEPTH: usize = 40;

/// Parse every document of `text`.
///
/// # Errors
/// The parser's message and position.
pub fn parse_documents(text: &str) -> Result<Vec<Document>, SyntaxError> {
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_documents: usize::MAX,
            // Kubernetes objects nest 18 deep at most (a CRD's schema); the reader recurses per
            // level, and a worker thread's stack must not run out first (a debug build's did
            // near 55 levels).
            max_depth: MAX_DEPTH,
        },
    };
    let nodes: Vec<Spanned<Node>> =
        serde_saphyr::from_multiple_with_options(text, options).map_err(|e| yaml_error(&e))?;
    Ok(nodes
        .into_iter()
        .enumerate()
        .map(|(index, node)| {
            let mut positions = BTreeMap::new();
            let value = into_value(node, String::new(), &mut positions);
            Document {
                value,
                index,
                positions,
            }
        })
        .collect())
}

/// The values of every document of `text`.
///
/// # Errors
/// The parser's message and position.
pub fn parse_values(text: &str) -> Result<Vec<Value>, SyntaxError> {
    Ok(parse_documents(text)?
        .into_iter()
        .map(|d| d.value)
        .collect())
}

/// Parse one YAML text that must hold exactly one document (an empty text
/// is `Null`).
///
/// # Errors
/// The parser's message and position, or several documents.
pub fn parse_one(text: &str) -> Result<Document, SyntaxError> {
    let mut docs = parse_documents(text)?;
    if docs.len() > 1 {
        return Err(SyntaxError {
            offset: None,
            position: docs.get(1).and_then(|d| d.position("")),
            message: format!("expected one YAML document, found {}", docs.len()),
        });
    }
    Ok(docs.pop().unwrap_or_default())
}

/// `objects` as a YAML stream: each document after a `---` line, each
/// ending with a newline (as `flux ... --export` and `kubectl` write them).
///
/// # Errors
/// The serialiser's message.
pub(crate) fn to_stream<'a, T: serde::Serialize + 'a>(
    objects: impl IntoIterator<Item = &'a T>,
) -> Result<String, String> {
    let mut out = String::new();
    for object in objects {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(object).map_err(|e| e.to_string())?);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

fn yaml_error(e: &serde_saphyr::Error) -> SyntaxError {
    let e = e.without_snippet();
    let message = match e {
        serde_saphyr::Error::Budget { breach, .. } => budget_message(breach),
        _ => serde_saphyr::DefaultMessageFormatter
            .format_message(e)
            .into_owned(),
    };
    let position = e
        .location()
        .map(|l| Position {
            line: usize::try_from(l.line()).unwrap_or(usize::MAX),
            column: usize::try_from(l.column()).unwrap_or(usize::MAX),
        })
        .filter(|p| p.line > 0);
    SyntaxError {
        offset: None,
        position,
        message,
    }
}

/// A limit of the reader, in words (the parser's own message is its enum's debug form).
fn budget_message(breach: &serde_saphyr::budget::BudgetBreach) -> String {
    use serde_saphyr::budget::BudgetBreach as B;
    match breach {
        B::Depth { .. } => format!(
            "nested more than {MAX_DEPTH} levels deep, the most image-update reads of a document"
        ),
        B::Events { events } => format!("over {events} YAML events, the most read from one input"),
        B::Nodes { nodes } => format!("over {nodes} YAML nodes, the most read from one input"),
        B::Aliases { aliases } => format!("over {aliases} aliases, the most read from one input"),
        B::Anchors { anchors } => format!("over {anchors} anchors, the most read from one input"),
        other => format!("over a limit of the YAML reader ({other:?})"),
    }
}

/// One node of a document, as serde-saphyr gives it, with the position of
/// each child (`Spanned`). Converted to a `Value` right away.
enum Node {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(String),
    Seq(Vec<Spanned<Node>>),
    Map(Vec<(String, Spanned<Node>)>),
}

fn into_value(
    node: Spanned<Node>,
    pointer: String,
    positions: &mut BTreeMap<String, Position>,
) -> Value {
    let at = node.referenced;
    if at.line() > 0 {
        positions.insert(
            pointer.clone(),
            Position {
                line: usize::try_from(at.line()).unwrap_or(usize::MAX),
                column: usize::try_from(at.column()).unwrap_or(usize::MAX),
            },
        );
    }
    match node.value {
        Node::Null => Value::Null,
        Node::Bool(b) => Value::Bool(b),
        Node::I64(n) => Value::from(n),
        Node::U64(n) => Value::from(n),
        Node::F64(n) => Value::from(n),
        Node::Str(s) => Value::String(s),
        Node::Seq(items) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| into_value(item, format!("{pointer}/{i}"), positions))
                .collect(),
        ),
        Node::Map(entries) => Value::Object(
            entries
                .into_iter()
                .map(|(k, v)| {
                    let child = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
                    let v = into_value(v, child, positions);
                    (k, v)
                })
                .collect(),
        ),
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML node")
    }

    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::I64(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::U64(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::F64(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Str(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::Str(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Node>>()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Key>()? {
            let value = map.next_value::<Spanned<Node>>()?;
            // A repeated key keeps its last value, as `serde_json::Value` did.
            entries.retain(|(k, _): &(String, Spanned<Node>)| *k != key.0);
            entries.push((key.0, value));
        }
        Ok(Node::Map(entries))
    }
}

/// A mapping key as a string: Kubernetes objects only have string keys,
/// but a YAML key may read as a number or a boolean (`1: a`, `on: b`).
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a scalar mapping key")
            }
            fn visit_str<E>(self, v: &str) -> Result<Key, E> {
                Ok(Key(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Key, E> {
                Ok(Key(v))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_unit<E>(self) -> Result<Key, E> {
                Ok(Key("null".to_owned()))
            }
            fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Key, A::Error> {
                Err(de::Error::custom("a mapping cannot be a mapping key here"))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Key, A::Error> {
                Err(de::Error::custom("a sequence cannot be a mapping key here"))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// One Kubernetes object of a document: the document itself, or an item of
/// a `List` (`kind` ending in `List`, with `items`), opened recursively.
#[derive(Debug, Clone)]
pub struct Object<'a> {
    pub value: &'a Value,
    pub document: &'a Document,
    /// JSON pointer of the object inside its document (`""`, `/items/3`).
    pub pointer: String,
}

impl<'a> Object<'a> {
    /// The object `value` of `document` (its root).
    #[must_use]
    pub(crate) fn root(document: &'a Document) -> Self {
        Self {
            value: &document.value,
            document,
            pointer: String::new(),
        }
    }

    /// Where the field at `field` (a JSON pointer relative to the object,
    /// such as `/status/latestRef`) starts, or its nearest ancestor.
    #[must_use]
    pub fn position(&self, field: &str) -> Option<Position> {
        self.document.position(&format!("{}{field}", self.pointer))
    }

    /// The value at `field` (a JSON pointer relative to the object); `None` when it is absent or
    /// null (null is absence, as the API server has it).
    #[must_use]
    pub(crate) fn field(&self, field: &str) -> Option<&'a Value> {
        self.value.pointer(field).filter(|v| !v.is_null())
    }

    /// A field meant to hold a string, by the one rule for plain scalars ([`plain_is_string`]:
    /// the value reader reads a plain `1`, `true` or `0x1f` as a number or a boolean, and such a
    /// value is refused): `Ok(None)` when absent or null.
    ///
    /// # Errors
    /// The field holds a number, a boolean or a collection; the caller names it at its position.
    pub(crate) fn string_field(&self, field: &str) -> Result<Option<&'a str>, tree::NotAString> {
        match self.field(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(tree::NotAString),
        }
    }
}

/// A JSON pointer as the field's dotted name in messages: `/spec/fluxcd/interval` is
/// `spec.fluxcd.interval` (`~1` and `~0` unescaped).
#[must_use]
pub(crate) fn dotted(pointer: &str) -> String {
    pointer
        .trim_start_matches('/')
        .split('/')
        .map(|p| p.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

/// A mapping key as one step of a JSON pointer (`/` and `~` escaped).
#[must_use]
pub(crate) fn pointer_step(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Every object of `document`, `List`s opened, in document order.
#[must_use]
pub fn objects(document: &Document) -> Vec<Object<'_>> {
    let mut out = Vec::new();
    flatten(&document.value, document, String::new(), &mut out);
    out
}

fn flatten<'a>(
    value: &'a Value,
    document: &'a Document,
    pointer: String,
    out: &mut Vec<Object<'a>>,
) {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.ends_with("List")
        && let Some(items) = value.get("items").and_then(Value::as_array)
    {
        for (i, item) in items.iter().enumerate() {
            flatten(item, document, format!("{pointer}/items/{i}"), out);
        }
        return;
    }
    out.push(Object {
        value,
        document,
        pointer,
    });
}

/// The API group of an object's `apiVersion` (`""` for the core group).
#[must_use]
pub(crate) fn api_group(value: &Value) -> &str {
    let version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// Whether `value` is an object of `kind` in the API `group`.
#[must_use]
pub(crate) fn is_kind(value: &Value, group: &str, kind: &str) -> bool {
    value.get("kind").and_then(Value::as_str) == Some(kind) && api_group(value) == group
}

/// `metadata.namespace` (`default` when absent, as kubectl has it) and
/// `metadata.name` (`""` when absent) of an object.
#[must_use]
pub(crate) fn namespace_name(value: &Value) -> (String, String) {
    let text = |p: &str| {
        value
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let mut namespace = text("/metadata/namespace");
    if namespace.is_empty() {
        "default".clone_into(&mut namespace);
    }
    (namespace, text("/metadata/name"))
}

/// `metadata.labels` of an object; non-string values are kept as JSON text.
#[must_use]
pub(crate) fn labels(value: &Value) -> BTreeMap<String, String> {
    value
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_positions() {
        let text = "a: 1\n1: x\ntrue: y\n---\nkind: List\nitems:\n- kind: X\n  spec:\n    image: 'app'\n    n: 1\n- &b {kind: Y}\n- *b\n";
        let docs = parse_documents(text).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(
            docs[0].value,
            serde_json::json!({"a": 1, "1": "x", "true": true})
        );
        let d = &docs[1];
        assert_eq!(d.index, 1);
        assert_eq!(d.value["items"][0]["spec"]["image"], "app");
        assert_eq!(d.value["items"][0]["spec"]["n"], 1, "{:#}", d.value);
        assert_eq!(
            d.position("/items/0/spec/image"),
            Some(Position {
                line: 9,
                column: 12
            })
        );
        // Absent: the nearest ancestor.
        assert_eq!(
            d.position("/items/0/spec/missing/deeper"),
            d.position("/items/0/spec")
        );
        let objects = objects(d);
        let pointers: Vec<&str> = objects.iter().map(|o| o.pointer.as_str()).collect();
        assert_eq!(pointers, ["/items/0", "/items/1", "/items/2"]);
        assert_eq!(
            objects[2].value["kind"], true,
            "YAML 1.1 booleans, as kubectl"
        );
        assert_eq!(
            objects[0].position("/spec/image"),
            d.position("/items/0/spec/image")
        );
    }

    #[test]
    fn errors_have_a_position_and_a_bare_message() {
        let err = parse_documents("a: 1\nb: [1\n").unwrap_err();
        assert_eq!(err.position.map(|p| p.line), Some(2), "{err:?}");
        assert!(!err.message.contains("<input>"), "{err:?}");
        assert!(!err.message.contains("line"), "{err:?}");
        assert!(!err.message.starts_with("error"), "{err:?}");
    }

    #[test]
    fn identity_helpers() {
        let v = serde_json::json!({"apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImagePolicy",
            "metadata": {"name": "p", "labels": {"a": "b", "n": 1}}});
        assert!(is_kind(&v, "image.toolkit.fluxcd.io", "ImagePolicy"));
        assert!(!is_kind(&v, "", "ImagePolicy"));
        assert_eq!(namespace_name(&v), ("default".to_owned(), "p".to_owned()));
        assert_eq!(labels(&v).get("n").map(String::as_str), Some("1"));
        assert_eq!(api_group(&serde_json::json!({"apiVersion": "v1"})), "");
    }
}
