//! Go's `encoding/json` encoding of template values, for Sprig's `toJson` family, and decoding for
//! `fromJson`.

use std::fmt::Write as _;

use crate::capped::Capped;
use crate::funcs::{CallCtx, CallError};
use crate::gofmt::format_float;
use crate::value::{Kind, Type, Underlying, Value};

/// Why a value was not encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodeError {
    /// Go's error (`json: unsupported type: complex128`).
    Json(String),
    /// The text would pass the cap it was given.
    TooLong,
}

impl From<String> for EncodeError {
    fn from(s: String) -> EncodeError {
        EncodeError::Json(s)
    }
}

/// Encode like `json.Marshal` (`indent` None) or `json.MarshalIndent(v, "", indent)`, refused past
/// `cap` bytes (a value that shares its parts may print exponentially many).
pub fn encode(
    v: &Value,
    indent: Option<&str>,
    escape_html: bool,
    cap: usize,
) -> Result<String, EncodeError> {
    let mut out = Capped::new(cap);
    write_value(&mut out, v, indent, 0, escape_html, 0)?;
    out.finish().ok_or(EncodeError::TooLong)
}

fn newline(out: &mut Capped, indent: Option<&str>, level: usize) {
    if let Some(ind) = indent {
        out.push('\n');
        for _ in 0..level {
            out.push_str(ind);
        }
    }
}

fn write_value(
    out: &mut Capped,
    v: &Value,
    indent: Option<&str>,
    level: usize,
    html: bool,
    depth: usize,
) -> Result<(), EncodeError> {
    if out.over() {
        return Err(EncodeError::TooLong);
    }
    if depth > 200 {
        return Err("json: unsupported value: encountered a cycle"
            .to_owned()
            .into());
    }
    match v {
        Value::Invalid | Value::Nil(_) => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i, _) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => {
            if !f.is_finite() {
                return Err(
                    format!("json: unsupported value: {}", format_float(*f, 'g', -1)).into(),
                );
            }
            let a = f.abs();
            if a != 0.0 && !(1e-6..1e21).contains(&a) {
                let s = format_float(*f, 'e', -1);
                // Go turns e-07 into e-7.
                let s = match s.find("e-0") {
                    Some(i) if s.len() == i + 4 => format!("{}e-{}", &s[..i], &s[i + 3..]),
                    _ => s,
                };
                out.push_str(&s);
            } else {
                out.push_str(&format_float(*f, 'f', -1));
            }
        }
        Value::Complex(..) => return Err("json: unsupported type: complex128".to_owned().into()),
        Value::Str(s) => write_string(out, s, html),
        Value::Slice(s) => {
            if let Type::Slice(e) = &s.ty
                && matches!(**e, Type::Uint8)
            {
                use base64::Engine as _;
                let bytes: Vec<u8> = s
                    .items
                    .iter()
                    .map(|b| {
                        if let Value::Int(i, _) = b {
                            *i as u8
                        } else {
                            0
                        }
                    })
                    .collect();
                write_string(
                    out,
                    &base64::engine::general_purpose::STANDARD.encode(bytes),
                    html,
                );
                return Ok(());
            }
            if s.items.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, item) in s.items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, level + 1);
                write_value(out, item, indent, level + 1, html, depth + 1)?;
            }
            newline(out, indent, level);
            out.push(']');
        }
        Value::Map(m) => {
            let key_kind = m.ty.map_types().map(|(k, _)| k.kind());
            if !matches!(
                key_kind,
                Some(Kind::String | Kind::Int | Kind::Int64 | Kind::Int32 | Kind::Uint8)
            ) {
                return Err(format!("json: unsupported type: {}", m.ty).into());
            }
            let entries = m.entries.borrow();
            let key = |k: &Value| match k {
                Value::Str(s) => s.to_string(),
                Value::Int(i, _) => i.to_string(),
                _ => String::new(),
            };
            // JSON sorts keys by their text. String keys are in that order already (kept in Go's
            // fmtsort order, by bytes), and are not copied: a map that contains itself would copy
            // its entries at every level. Integer keys come only from data.
            let mut order: Vec<usize> = (0..entries.len()).collect();
            if key_kind != Some(Kind::String) {
                order.sort_by_cached_key(|i| key(&entries[*i].0).into_bytes());
            }
            write_object(
                out,
                order.iter().map(|i| (key(&entries[*i].0), &entries[*i].1)),
                entries.is_empty(),
                indent,
                level,
                html,
                depth,
            )?;
        }
        Value::Struct(s) => {
            // A `json.Marshaler` (name.Digest) writes itself; its output is a JSON string here.
            if let Some(m) = s.ty.methods.iter().find(|m| m.name == "MarshalJSON") {
                let bytes: Vec<u8> = (m.call)(v, &[])
                    .slice_items()
                    .unwrap_or_default()
                    .iter()
                    .map(|b| match b {
                        Value::Int(i, _) => u8::try_from(*i).unwrap_or(0),
                        _ => 0,
                    })
                    .collect();
                let text = String::from_utf8_lossy(&bytes);
                match serde_json::from_str::<serde_json::Value>(&text) {
                    Ok(serde_json::Value::String(t)) => write_string(out, &t, html),
                    _ => out.push_str(&text),
                }
                return Ok(());
            }
            let mut entries: Vec<(String, Value)> = Vec::new();
            collect_fields(v, &mut entries);
            write_object(
                out,
                entries.iter().map(|(k, v)| (k.clone(), v)),
                entries.is_empty(),
                indent,
                level,
                html,
                depth,
            )?;
        }
    }
    Ok(())
}

fn collect_fields(v: &Value, entries: &mut Vec<(String, Value)>) {
    let Value::Struct(s) = v else { return };
    let Underlying::Struct(defs) = &s.ty.underlying else {
        return;
    };
    for (def, val) in defs.iter().zip(&s.fields) {
        // Embedded structs are inlined, exported or not; an embedded interface is a plain field.
        let inline = def.embedded && def.ty.kind() == Kind::Struct && val.kind() == Kind::Struct;
        if !def.exported() && !inline {
            continue;
        }
        if inline && def.json_name.is_none() {
            collect_fields(val, entries);
            continue;
        }
        if def.json_omitempty && is_empty_json(val) {
            continue;
        }
        let name = def.json_name.clone().unwrap_or_else(|| def.name.clone());
        if entries.iter().any(|(n, _)| *n == name) {
            continue;
        }
        entries.push((name, val.clone()));
    }
}

fn is_empty_json(v: &Value) -> bool {
    match v {
        Value::Invalid | Value::Nil(_) => true,
        Value::Bool(b) => !*b,
        Value::Int(i, _) => *i == 0,
        Value::Float(f) => *f == 0.0,
        Value::Str(s) => s.is_empty(),
        Value::Slice(s) => s.items.is_empty(),
        Value::Map(m) => m.entries.borrow().is_empty(),
        _ => false,
    }
}

fn write_object<'v>(
    out: &mut Capped,
    entries: impl Iterator<Item = (String, &'v Value)>,
    empty: bool,
    indent: Option<&str>,
    level: usize,
    html: bool,
    depth: usize,
) -> Result<(), EncodeError> {
    if empty {
        out.push_str("{}");
        return Ok(());
    }
    out.push('{');
    for (i, (k, v)) in entries.enumerate() {
        if i > 0 {
            out.push(',');
        }
        newline(out, indent, level + 1);
        write_string(out, &k, html);
        out.push(':');
        if indent.is_some() {
            out.push(' ');
        }
        write_value(out, v, indent, level + 1, html, depth + 1)?;
    }
    newline(out, indent, level);
    out.push('}');
    Ok(())
}

fn write_string(out: &mut Capped, s: &str, html: bool) {
    out.push('"');
    for c in s.chars() {
        if out.over() {
            return;
        }
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' if html => {
                let _ = write!(out, "\\u00{:02x}", c as u32);
            }
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u00{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Decode like `json.Unmarshal` into `interface{}`: objects become `map[string]interface {}`, arrays
/// `[]interface {}`, numbers `float64`. What the result holds is counted and asked for before the
/// values are made.
pub fn decode(c: &mut CallCtx, s: &str) -> Result<Value, CallError> {
    let v: serde_json::Value =
        serde_json::from_str(s).map_err(|e| CallError::Msg(e.to_string()))?;
    let mut n = Parts::default();
    n.count(&v);
    c.reserve_parts(n.lists, n.elements, n.strings, n.bytes)?;
    Ok(from_json(&v))
}

/// What a decoded value is made of.
#[derive(Default)]
struct Parts {
    lists: usize,
    elements: usize,
    strings: usize,
    bytes: usize,
}

impl Parts {
    /// Add the lists and maps, their elements (a map entry is two), and the strings of `v`.
    fn count(&mut self, v: &serde_json::Value) {
        match v {
            serde_json::Value::String(s) => {
                self.strings = self.strings.saturating_add(1);
                self.bytes = self.bytes.saturating_add(s.len());
            }
            serde_json::Value::Array(a) => {
                self.lists = self.lists.saturating_add(1);
                self.elements = self.elements.saturating_add(a.len());
                a.iter().for_each(|x| self.count(x));
            }
            serde_json::Value::Object(o) => {
                self.lists = self.lists.saturating_add(1);
                self.elements = self.elements.saturating_add(o.len().saturating_mul(2));
                for (k, x) in o {
                    self.strings = self.strings.saturating_add(1);
                    self.bytes = self.bytes.saturating_add(k.len());
                    self.count(x);
                }
            }
            _ => {}
        }
    }
}

fn from_json(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Nil(Type::Any),
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(0.0)),
        serde_json::Value::String(s) => Value::str(s),
        serde_json::Value::Array(a) => Value::list(a.iter().map(from_json).collect()),
        serde_json::Value::Object(o) => Value::map(
            Type::map_of(Type::String, Type::Any),
            o.iter()
                .map(|(k, v)| (Value::str(k), from_json(v)))
                .collect(),
        ),
    }
}
