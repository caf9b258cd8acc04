//! Go's `encoding/json` encoding of template values, for Sprig's `toJson` family, and decoding for
//! `fromJson`.

use std::fmt::Write as _;

use crate::gofmt::format_float;
use crate::value::{Kind, Type, Underlying, Value};

/// Encode like `json.Marshal` (`indent` None) or `json.MarshalIndent(v, "", indent)`.
pub fn encode(v: &Value, indent: Option<&str>, escape_html: bool) -> Result<String, String> {
    let mut out = String::new();
    write_value(&mut out, v, indent, 0, escape_html, 0)?;
    Ok(out)
}

fn newline(out: &mut String, indent: Option<&str>, level: usize) {
    if let Some(ind) = indent {
        out.push('\n');
        for _ in 0..level {
            out.push_str(ind);
        }
    }
}

fn write_value(
    out: &mut String,
    v: &Value,
    indent: Option<&str>,
    level: usize,
    html: bool,
    depth: usize,
) -> Result<(), String> {
    if depth > 200 {
        return Err("json: unsupported value: encountered a cycle".to_owned());
    }
    match v {
        Value::Invalid | Value::Nil(_) => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i, _) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => {
            if !f.is_finite() {
                return Err(format!(
                    "json: unsupported value: {}",
                    format_float(*f, 'g', -1)
                ));
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
        Value::Complex(..) => return Err("json: unsupported type: complex128".to_owned()),
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
                return Err(format!("json: unsupported type: {}", m.ty));
            }
            let mut entries: Vec<(String, Value)> = m
                .entries
                .borrow()
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Value::Str(s) => s.to_string(),
                        Value::Int(i, _) => i.to_string(),
                        _ => String::new(),
                    };
                    (key, v.clone())
                })
                .collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            write_object(out, &entries, indent, level, html, depth)?;
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
            write_object(out, &entries, indent, level, html, depth)?;
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

fn write_object(
    out: &mut String,
    entries: &[(String, Value)],
    indent: Option<&str>,
    level: usize,
    html: bool,
    depth: usize,
) -> Result<(), String> {
    if entries.is_empty() {
        out.push_str("{}");
        return Ok(());
    }
    out.push('{');
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        newline(out, indent, level + 1);
        write_string(out, k, html);
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

fn write_string(out: &mut String, s: &str, html: bool) {
    out.push('"');
    for c in s.chars() {
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
/// `[]interface {}`, numbers `float64`.
pub fn decode(s: &str) -> Result<Value, String> {
    let v: serde_json::Value = serde_json::from_str(s).map_err(|e| e.to_string())?;
    Ok(from_json(&v))
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
