//! Comparing the values of two YAML texts: shared by the `plan` and `krm`
//! targets, which check that a rewrite changes the parsed tree only at the
//! fields it reports.

use serde_json::Value;

/// One place where two trees differ: a JSON pointer and both values there
/// (`None` where the node is absent).
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    pub pointer: String,
    pub old: Option<Value>,
    pub new: Option<Value>,
}

/// Every place where `old` and `new` differ, as deep as both are the same
/// kind of collection.
#[must_use]
pub fn differences(old: &Value, new: &Value) -> Vec<Difference> {
    let mut out = Vec::new();
    diff(old, new, &mut String::new(), &mut out);
    out
}

fn diff(old: &Value, new: &Value, pointer: &mut String, out: &mut Vec<Difference>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, va) in a {
                let len = pointer.len();
                push_key(pointer, key);
                match b.get(key) {
                    Some(vb) => diff(va, vb, pointer, out),
                    None => out.push(Difference {
                        pointer: pointer.clone(),
                        old: Some(va.clone()),
                        new: None,
                    }),
                }
                pointer.truncate(len);
            }
            for (key, vb) in b {
                if !a.contains_key(key) {
                    let len = pointer.len();
                    push_key(pointer, key);
                    out.push(Difference {
                        pointer: pointer.clone(),
                        old: None,
                        new: Some(vb.clone()),
                    });
                    pointer.truncate(len);
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                diff(va, vb, pointer, out);
                pointer.truncate(len);
            }
        }
        _ if old == new => {}
        _ => out.push(Difference {
            pointer: pointer.clone(),
            old: Some(old.clone()),
            new: Some(new.clone()),
        }),
    }
}

/// Append `/key` to a JSON pointer, escaped.
pub fn push_key(pointer: &mut String, key: &str) {
    pointer.push('/');
    pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
}

/// The JSON pointer of a scanner field path (`spec.containers[0].image`,
/// `metadata.annotations["a.b/c"]`), or `None` when the path goes through a
/// complex key (`[?]`) and names no pointer.
#[must_use]
pub fn field_pointer(path: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('[') {
            if after.starts_with("?]") {
                return None;
            }
            if after.starts_with('"') {
                let mut stream = serde_json::Deserializer::from_str(after).into_iter::<String>();
                let key = stream.next()?.ok()?;
                let used = stream.byte_offset();
                push_key(&mut out, &key);
                rest = after[used..].strip_prefix(']')?;
            } else {
                let end = after.find(']')?;
                let index: usize = after[..end].parse().ok()?;
                out.push('/');
                out.push_str(&index.to_string());
                rest = &after[end + 1..];
            }
            continue;
        }
        let key_start = rest.strip_prefix('.').unwrap_or(rest);
        let end = key_start.find(['.', '[']).unwrap_or(key_start.len());
        push_key(&mut out, &key_start[..end]);
        rest = &key_start[end..];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_paths_become_pointers() {
        assert_eq!(
            field_pointer("spec.containers[0].image").as_deref(),
            Some("/spec/containers/0/image")
        );
        assert_eq!(
            field_pointer(r#"metadata.annotations["a.b/c~"].x"#).as_deref(),
            Some("/metadata/annotations/a.b~1c~0/x")
        );
        assert_eq!(field_pointer(r#"[""]"#).as_deref(), Some("/"));
        assert_eq!(field_pointer("[2][3]").as_deref(), Some("/2/3"));
        assert_eq!(field_pointer("a[?].b"), None);
        assert_eq!(field_pointer("").as_deref(), Some(""));
    }

    #[test]
    fn differences_name_their_pointers() {
        let old = serde_json::json!({"a": [1, {"b": "x"}], "c": 1, "d": [1]});
        let new = serde_json::json!({"a": [1, {"b": "y"}], "e": 2, "d": [1, 2]});
        let found: Vec<String> = differences(&old, &new)
            .into_iter()
            .map(|d| d.pointer)
            .collect();
        assert_eq!(found, ["/a/1/b", "/c", "/d", "/e"]);
    }
}
