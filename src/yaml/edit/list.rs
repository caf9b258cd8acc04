//! Edits of a large list read without a tree: a kpt ResourceList, whose items are known only by
//! their byte ranges (the scanner's one pass records them, `updater::source::resource_list`), and
//! whose root mapping gets a `results` entry.
//!
//! Items are added after the last one in the sequence's own style: in a block sequence as lines
//! at the last item's dash and content columns, in a flow sequence as JSON objects after a `, `.
//! Removed items lose their lines (block) or their text up to the next item (flow).

use std::ops::Range;

use serde_json::Value;

use super::Edit;
use super::lines;

/// An item to add to a list, written in both styles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewItem {
    /// The item as a YAML document (block style, each line ending with `\n`).
    block: String,
    /// The item as one line of JSON, for a flow sequence.
    flow: String,
}

impl NewItem {
    /// An object, written by the YAML and JSON serialisers.
    ///
    /// # Errors
    /// A serialiser's message.
    pub(crate) fn object(value: &Value) -> Result<Self, String> {
        Ok(Self {
            block: serde_saphyr::to_string(value).map_err(|e| e.to_string())?,
            flow: serde_json::to_string(value).map_err(|e| e.to_string())?,
        })
    }

    /// A file's text as an item carrying `annotations` (kpt's path annotations, as `kpt fn
    /// source` gives a package's files): in a block sequence its lines as written, then a
    /// `metadata.annotations` mapping; in a flow one, its object with `metadata` set to those
    /// annotations (an empty object when the text is not one).
    #[must_use]
    pub(crate) fn file(text: &str, annotations: &[(&str, &str)]) -> Self {
        let mut block = text.to_owned();
        if !block.is_empty() && !block.ends_with('\n') {
            block.push('\n');
        }
        block.push_str("metadata:\n  annotations:\n");
        let mut map = serde_json::Map::new();
        for (key, value) in annotations {
            block.push_str(&format!("    {key}: {}\n", Value::from(*value)));
            map.insert((*key).to_owned(), Value::from(*value));
        }
        let mut object = crate::yaml::parse_values(text)
            .ok()
            .and_then(|mut d| (!d.is_empty()).then(|| d.swap_remove(0)))
            .filter(Value::is_object)
            .unwrap_or_else(|| serde_json::json!({}));
        if let Some(o) = object.as_object_mut() {
            o.insert(
                "metadata".to_owned(),
                serde_json::json!({ "annotations": map }),
            );
        }
        Self {
            block,
            flow: object.to_string(),
        }
    }
}

/// The items of one sequence, as byte ranges of its text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Items<'a> {
    pub text: &'a str,
    /// Each item's node, in order.
    pub ranges: &'a [Range<usize>],
}

impl Items<'_> {
    /// Whether the sequence is written in flow style: its last item has no `-` opening it.
    #[must_use]
    pub(crate) fn flow(&self) -> bool {
        self.ranges
            .last()
            .is_some_and(|last| lines::dash_before(self.text, last.start).is_none())
    }

    /// The edits that append `add` after the last item (see [`Items::edits`]); `None` when the
    /// sequence has no items to place the new ones by.
    #[must_use]
    pub(crate) fn append_items(&self, add: &[NewItem]) -> Option<Vec<Edit>> {
        self.edits(&[], add)
    }

    /// The edits that remove the items at the indexes `remove` (in order) and add `add` after the
    /// last item; `None` when the sequence has no items to place the new ones by.
    ///
    /// In a flow sequence each new item is `, ` and its JSON after the last item. In a block
    /// sequence the new items' lines go at the end of the last item's line (before its line
    /// break), each after a line break, at the last item's dash and content columns. A removed
    /// run of items loses its lines (block) or its text up to the next item (flow); a run at
    /// the end is replaced by the new items.
    #[must_use]
    pub(crate) fn edits(&self, remove: &[usize], add: &[NewItem]) -> Option<Vec<Edit>> {
        let last = self.ranges.last()?;
        let flow = self.flow();
        let new_items: String = if flow {
            add.iter().map(|n| format!(", {}", n.flow)).collect()
        } else {
            self.block(add)
        };
        let newline = lines::newline(self.text);
        let mut edits = Vec::new();
        let mut appended = false;
        for run in runs(remove) {
            let (first, end) = (run.start, run.end - 1);
            let start = self.start_of(first, flow);
            match self.ranges.get(end + 1) {
                Some(_) => edits.push(Edit::new(start..self.start_of(end + 1, flow), "")),
                None if flow && first > 0 => {
                    // From the end of the item before the run.
                    let from = self.ranges[first - 1].end;
                    edits.push(Edit::new(from..self.ranges[end].end, new_items.clone()));
                    appended = true;
                }
                None if flow => {
                    let text = new_items.strip_prefix(", ").unwrap_or(&new_items);
                    edits.push(Edit::new(start..self.ranges[end].end, text));
                    appended = true;
                }
                None => {
                    // The line break before the run's first line stays; the new items start
                    // with one of their own.
                    let from = start.saturating_sub(newline.len());
                    let to = lines::line_end(self.text, self.ranges[end].end);
                    edits.push(Edit::new(from..to, new_items.clone()));
                    appended = true;
                }
            }
        }
        if !appended && !add.is_empty() {
            let at = if flow {
                last.end
            } else {
                lines::line_end(self.text, last.end)
            };
            edits.push(Edit::new(at..at, new_items));
        }
        Some(edits)
    }

    /// Where item `i` starts: its node (flow), the start of its dash's line (block).
    fn start_of(&self, i: usize, flow: bool) -> usize {
        let node = self.ranges[i].start;
        if flow {
            node
        } else {
            lines::line_start(
                self.text,
                lines::dash_before(self.text, node).unwrap_or(node),
            )
        }
    }

    /// New block items, each line after a line break, at the last item's dash and content
    /// columns.
    fn block(&self, add: &[NewItem]) -> String {
        let Some(last) = self.ranges.last() else {
            return String::new();
        };
        let content = lines::column(self.text, last.start);
        let dash = lines::dash_before(self.text, last.start)
            .map_or(content.saturating_sub(2), |d| lines::column(self.text, d));
        let newline = lines::newline(self.text);
        let mut out = String::new();
        for item in add {
            let mut first = true;
            for line in item.block.lines() {
                out.push_str(newline);
                if line.is_empty() {
                    continue;
                }
                if std::mem::take(&mut first) {
                    out.push_str(&" ".repeat(dash));
                    out.push('-');
                    out.push_str(&" ".repeat(content.saturating_sub(dash + 1).max(1)));
                } else {
                    out.push_str(&" ".repeat(content.max(dash + 2)));
                }
                out.push_str(line);
            }
        }
        out
    }
}

/// Consecutive indexes grouped into ranges.
fn runs(indexes: &[usize]) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for &i in indexes {
        match out.last_mut() {
            Some(run) if run.end == i => run.end = i + 1,
            _ => out.push(i..i + 1),
        }
    }
    out
}

/// The root mapping of a large text, read without a tree: how to set one of its entries.
#[derive(Debug, Clone)]
pub(crate) struct RootMap<'a> {
    pub text: &'a str,
    /// The mapping is written in flow style (`{...}`).
    pub flow: bool,
    /// The end of the last entry's value (in flow style with no entries, the offset of the
    /// closing `}`).
    pub entries_end: usize,
}

impl RootMap<'_> {
    /// The edit that sets an entry to `entry` (its whole text: `key: value` in flow style, its
    /// lines in block style): it replaces the existing entry spanning `existing` (from its key to
    /// the end of its value), or goes after the last entry.
    #[must_use]
    pub(crate) fn set(&self, existing: Option<&Range<usize>>, entry: &str) -> Edit {
        let text = self.text;
        if self.flow {
            if let Some(range) = existing {
                return Edit::new(range.clone(), entry);
            }
            let at = self.entries_end;
            let empty = text[..at].trim_end().ends_with('{');
            return Edit::new(
                at..at,
                if empty {
                    entry.to_owned()
                } else {
                    format!(", {entry}")
                },
            );
        }
        if let Some(range) = existing {
            let start = line_start_if_blank_before(text, range.start);
            return Edit::new(start..lines::after_line(text, range.end), entry);
        }
        let at = lines::after_line(text, self.entries_end);
        let replacement = if at == text.len() && !text.is_empty() && !text.ends_with('\n') {
            format!("{}{entry}", lines::newline(text))
        } else {
            entry.to_owned()
        };
        Edit::new(at..at, replacement)
    }
}

/// The start of `offset`'s line when only spaces precede it there.
fn line_start_if_blank_before(text: &str, offset: usize) -> usize {
    let start = lines::line_start(text, offset);
    if text.as_bytes()[start..offset].iter().all(|&b| b == b' ') {
        start
    } else {
        offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::edit::apply;

    fn item(name: &str) -> NewItem {
        NewItem::object(&serde_json::json!({"kind": "ConfigMap", "metadata": {"name": name}}))
            .unwrap()
    }

    fn edited(text: &str, remove: &[usize], add: &[NewItem]) -> String {
        let tree = crate::yaml::tree::Tree::parse(text).unwrap();
        let root = tree.docs()[0].root.unwrap();
        let items = tree.get(root, "items").unwrap();
        let ranges: Vec<Range<usize>> = tree
            .items(items)
            .iter()
            .map(|i| tree.node(*i).range.clone())
            .collect();
        let list = Items {
            text,
            ranges: &ranges,
        };
        apply(text, &mut list.edits(remove, add).unwrap()).unwrap()
    }

    #[test]
    fn block_items_are_added_and_removed_as_lines() {
        let text = "items:\n  - a: 1\n  - b: 2 # gen\n  - # c\n    c: 3\nresults: []\n";
        assert_eq!(
            edited(text, &[1, 2], &[item("x")]),
            "items:\n  - a: 1\n  - kind: ConfigMap\n    metadata:\n      name: x\nresults: []\n"
        );
        assert_eq!(
            edited(text, &[1], &[item("x")]),
            "items:\n  - a: 1\n  - # c\n    c: 3\n  - kind: ConfigMap\n    metadata:\n      name: x\nresults: []\n"
        );
        let no_newline = "items:\n- a: 1";
        assert_eq!(
            edited(no_newline, &[], &[item("y")]),
            "items:\n- a: 1\n- kind: ConfigMap\n  metadata:\n    name: \"y\""
        );
    }

    #[test]
    fn flow_items_are_json() {
        let text = "{items: [{a: 1}, {b: 2}], x: 1}";
        assert_eq!(
            edited(text, &[1], &[item("x")]),
            "{items: [{a: 1}, {\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"}}], x: 1}"
        );
        assert_eq!(edited(text, &[0], &[]), "{items: [{b: 2}], x: 1}");
        // JSON over several lines: the items have no dash, so the list is flow.
        let json = "{\"items\": [\n  {\"a\": 1}\n]}";
        assert_eq!(
            edited(json, &[], &[item("x")]),
            "{\"items\": [\n  {\"a\": 1}, {\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"}}\n]}"
        );
    }

    #[test]
    fn a_file_as_an_item() {
        let n = NewItem::file("a: 1\n", &[("config.kubernetes.io/path", "x/y.yaml")]);
        assert_eq!(
            n.block,
            "a: 1\nmetadata:\n  annotations:\n    config.kubernetes.io/path: \"x/y.yaml\"\n"
        );
        assert_eq!(
            n.flow,
            "{\"a\":1,\"metadata\":{\"annotations\":{\"config.kubernetes.io/path\":\"x/y.yaml\"}}}"
        );
    }

    #[test]
    fn root_entries() {
        let text = "a: 1\nresults:\n- x\nb: 2";
        let root = RootMap {
            text,
            flow: false,
            entries_end: text.len(),
        };
        let start = text.find("results").unwrap();
        let end = text.find("b:").unwrap() - 1;
        let e = root.set(Some(&(start..end)), "results: []\n");
        assert_eq!(apply(text, &mut [e]).unwrap(), "a: 1\nresults: []\nb: 2");
        let e = root.set(None, "c: 3\n");
        assert_eq!(
            apply(text, &mut [e]).unwrap(),
            "a: 1\nresults:\n- x\nb: 2\nc: 3\n"
        );
        let flow = RootMap {
            text: "{}",
            flow: true,
            entries_end: 1,
        };
        assert_eq!(
            apply("{}", &mut [flow.set(None, "c: 3")]).unwrap(),
            "{c: 3}"
        );
    }
}
