//! Property test of the byte-preservation promise: random YAML with markers
//! in random places, quote styles, indentation and line endings. Only the
//! marked scalars change, and the output parses to the input's tree with
//! exactly those values replaced.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use image_update::api::markers::Layout;
use image_update::api::plan::{ImageRef, PolicyKey, PolicyTable};
use proptest::prelude::*;
use serde_json::Value;

#[derive(Debug, Clone)]
enum Style {
    Plain,
    Single,
    Double,
}

#[derive(Debug, Clone)]
struct Scalar {
    value: String,
    style: Style,
    marker: Option<&'static str>,
}

#[derive(Debug, Clone)]
enum Node {
    Scalar(Scalar),
    Map(Vec<Node>),
    Seq(Vec<Scalar>, bool),
}

const OLD: [&str; 8] = ["app:1.0", "1.0", "10", "yes", "v1", "a b", "é:1", "x#y"];
const SETTERS: [&str; 3] = ["ns:p", "ns:p:tag", "ns:p:name"];
const TAGS: [&str; 8] = [
    "1.10",
    "v2",
    "10",
    "yes",
    "null",
    "2024-01-02",
    "1e3",
    "v1.2.3-rc.1",
];

fn scalar() -> impl Strategy<Value = Scalar> {
    (
        0..OLD.len(),
        0..3u8,
        proptest::option::weighted(0.4, 0..SETTERS.len()),
    )
        .prop_map(|(v, s, m)| Scalar {
            value: OLD[v].to_owned(),
            style: match s {
                0 => Style::Plain,
                1 => Style::Single,
                _ => Style::Double,
            },
            marker: m.map(|i| SETTERS[i]),
        })
}

fn node() -> impl Strategy<Value = Node> {
    let leaf = prop_oneof![
        scalar().prop_map(Node::Scalar),
        (proptest::collection::vec(scalar(), 1..4), any::<bool>())
            .prop_map(|(v, wide)| Node::Seq(v, wide)),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        proptest::collection::vec(inner, 1..4).prop_map(Node::Map)
    })
}

fn render_scalar(s: &Scalar) -> String {
    let body = match s.style {
        Style::Plain => s.value.clone(),
        Style::Single => format!("'{}'", s.value),
        Style::Double => format!("\"{}\"", s.value),
    };
    match s.marker {
        Some(m) => format!("{body} # {{\"$imagepolicy\": \"{m}\"}}"),
        None => body,
    }
}

fn render(nodes: &[Node], indent: usize, out: &mut Vec<String>) {
    let pad = " ".repeat(indent);
    for (i, n) in nodes.iter().enumerate() {
        match n {
            Node::Scalar(s) => out.push(format!("{pad}k{i}: {}", render_scalar(s))),
            Node::Map(children) => {
                out.push(format!("{pad}k{i}:"));
                render(children, indent + 2, out);
            }
            Node::Seq(items, wide) => {
                out.push(format!("{pad}k{i}:"));
                let item_pad = if *wide {
                    " ".repeat(indent + 2)
                } else {
                    pad.clone()
                };
                for s in items {
                    out.push(format!("{item_pad}- {}", render_scalar(s)));
                }
            }
        }
    }
}

/// The input's tree, with every marked scalar replaced by what its setter writes.
fn expected(nodes: &[Node], tree: &Value, latest: &ImageRef) -> Value {
    let mut out = tree.clone();
    for (i, n) in nodes.iter().enumerate() {
        let key = format!("k{i}");
        let replace = |s: &Scalar, slot: &mut Value| {
            if let Some(m) = s.marker {
                let new = match m {
                    "ns:p" => latest.image(),
                    "ns:p:tag" => latest.tag.clone(),
                    _ => latest.name.clone(),
                };
                // A value that already equals the latest is left as written.
                if new != s.value {
                    *slot = Value::String(new);
                }
            }
        };
        match n {
            Node::Scalar(s) => replace(s, &mut out[&key]),
            Node::Map(children) => out[&key] = expected(children, &tree[&key], latest),
            Node::Seq(items, _) => {
                for (j, s) in items.iter().enumerate() {
                    replace(s, &mut out[&key][j]);
                }
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn only_marked_scalars_change(nodes in proptest::collection::vec(node(), 1..6), crlf in any::<bool>(), blank in any::<bool>(), tag in 0..TAGS.len()) {
        let mut lines = vec!["# generated".to_owned()];
        render(&nodes, 0, &mut lines);
        if blank {
            lines.insert(1, String::new());
        }
        let eol = if crlf { "\r\n" } else { "\n" };
        let text = lines.join(eol) + eol;
        let latest = ImageRef::parse(&format!("ghcr.io/acme/app:{}", TAGS[tag])).unwrap();
        let mut table = PolicyTable::new();
        table.insert(PolicyKey::parse("ns:p").unwrap(), Some(latest.clone()), "test").unwrap();

        let plan = image_update::api::plan::plan(&text, Layout::Documents, &table, Default::default()).unwrap();
        prop_assert!(plan.planned.warnings.is_empty(), "{:?}", plan.planned.warnings);
        let output = plan.new_text.clone().unwrap_or_else(|| text.clone());

        // The output parses to the input's tree with the marked values replaced.
        let before: Value = serde_saphyr::from_str(&text).unwrap();
        let after: Value = serde_saphyr::from_str(&output).unwrap();
        prop_assert_eq!(&after, &expected(&nodes, &before, &latest));

        // Line by line: unmarked lines are identical; on marked lines only
        // the value between the `:`/`- ` prefix and the ` # {` comment differs.
        let old_lines: Vec<&str> = text.split_inclusive('\n').collect();
        let new_lines: Vec<&str> = output.split_inclusive('\n').collect();
        prop_assert_eq!(old_lines.len(), new_lines.len());
        let changed: std::collections::BTreeSet<usize> = plan.planned.changes.iter().map(|c| c.position.line).collect();
        for (i, (a, b)) in old_lines.iter().zip(&new_lines).enumerate() {
            if a == b {
                continue;
            }
            prop_assert!(changed.contains(&(i + 1)), "line {} changed without a change record", i + 1);
            let split = |l: &str| {
                let cut = l.find(" # {").unwrap();
                let head = &l[..cut];
                let start = head.find(": ").map_or_else(|| head.find("- ").unwrap() + 2, |p| p + 2);
                (l[..start].to_owned(), l[cut..].to_owned())
            };
            prop_assert_eq!(split(a), split(b));
        }

        // A second run changes nothing.
        let again = image_update::api::plan::plan(&output, Layout::Documents, &table, Default::default()).unwrap();
        prop_assert!(again.new_text.is_none());
    }
}
