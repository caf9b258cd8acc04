//! Lists and dicts: `list`, `first`, `uniq`, `dict`, `get`, `set`, `pluck`, `deepCopy`...

use std::collections::HashMap;

use super::{
    NIL_DEREF, Res, a, arg_int, arg_str, b32dec, b32enc, b64dec, deep_copy, dict_get, dict_set,
    dict_type, empty, i, is_nil, json_fn, list_result, m, msg, path_base, path_clean, path_dir,
    path_ext, s, slice_of, strings_result, strslice, strval, to_int64, unsupported,
};
use crate::funcs::FuncDef;
use crate::funcs::{CallCtx, Param, def, str_result, t};
use crate::value::{Type, Value};

/// Registers this family's functions.
pub(super) fn register(f: &mut HashMap<&'static str, FuncDef>) {
    let mut add =
        |name: &'static str, params: Vec<Param>, variadic: bool, imp: crate::funcs::Impl| {
            f.insert(name, def(params, variadic, imp));
        };
    add("join", vec![s(), a()], false, |c, a| {
        str_result(c, strslice(&a[1]).join(arg_str(&a[0])))
    });
    add("sortAlpha", vec![a()], false, |c, a| {
        let mut v = match &a[0] {
            Value::Slice(_) | Value::Nil(Type::Slice(_)) => strslice(&a[0]),
            other => vec![strval(other)],
        };
        v.sort_by(|x, y| x.as_bytes().cmp(y.as_bytes()));
        strings_result(c, v)
    });
    add("default", vec![a(), a()], true, |_, a| {
        if a.len() < 2 || empty(&a[1]) {
            return Ok(a[0].clone());
        }
        Ok(a[1].clone())
    });
    add("empty", vec![a()], false, |_, a| {
        Ok(Value::Bool(empty(&a[0])))
    });
    add("coalesce", vec![a()], true, |_, a| {
        Ok(a.iter()
            .find(|v| !empty(v))
            .cloned()
            .unwrap_or(Value::Nil(Type::Any)))
    });
    add("all", vec![a()], true, |_, a| {
        Ok(Value::Bool(a.iter().all(|v| !empty(v))))
    });
    add("any", vec![a()], true, |_, a| {
        Ok(Value::Bool(a.iter().any(|v| !empty(v))))
    });
    fn compact(c: &mut CallCtx, a: Vec<Value>) -> Res {
        let items = slice_of(&a[0], "compact")?;
        list_result(c, items.into_iter().filter(|v| !empty(v)).collect())
    }
    add("compact", vec![a()], false, compact);
    add("mustCompact", vec![a()], false, compact);
    add("fromJson", vec![s()], false, |_, a| {
        Ok(crate::json::decode(arg_str(&a[0])).unwrap_or(Value::Nil(Type::Any)))
    });
    add("mustFromJson", vec![s()], false, |_, a| {
        Ok(crate::json::decode(arg_str(&a[0]))?)
    });
    add("toJson", vec![a()], false, |c, a| {
        str_result(c, json_fn(&a[0], None, true).unwrap_or_default())
    });
    add("toPrettyJson", vec![a()], false, |c, a| {
        str_result(c, json_fn(&a[0], Some("  "), true).unwrap_or_default())
    });
    add("toRawJson", vec![a()], false, |c, a| {
        str_result(c, json_fn(&a[0], None, false)?)
    });
    add("mustToJson", vec![a()], false, |c, a| {
        str_result(c, json_fn(&a[0], None, true)?)
    });
    add("mustToPrettyJson", vec![a()], false, |c, a| {
        str_result(c, json_fn(&a[0], Some("  "), true)?)
    });
    add("mustToRawJson", vec![a()], false, |c, a| {
        str_result(c, json_fn(&a[0], None, false)?)
    });
    add("ternary", vec![a(), a(), t(Type::Bool)], false, |_, a| {
        Ok(if a[2].truth() {
            a[0].clone()
        } else {
            a[1].clone()
        })
    });
    add("deepCopy", vec![a()], false, |_, a| deep_copy(&a[0], 0));
    add("mustDeepCopy", vec![a()], false, |_, a| deep_copy(&a[0], 0));
    add("typeOf", vec![a()], false, |_, a| {
        Ok(Value::string(
            a[0].clone().unwrap_nil_interface().type_name(),
        ))
    });
    add("typeIs", vec![s(), a()], false, |_, a| {
        Ok(Value::Bool(
            arg_str(&a[0]) == a[1].clone().unwrap_nil_interface().type_name(),
        ))
    });
    add("typeIsLike", vec![s(), a()], false, |_, a| {
        let t = a[1].clone().unwrap_nil_interface().type_name();
        let target = arg_str(&a[0]);
        Ok(Value::Bool(target == t || format!("*{target}") == t))
    });
    add("kindOf", vec![a()], false, |_, a| {
        Ok(Value::str(
            a[0].clone().unwrap_nil_interface().kind().name(),
        ))
    });
    add("kindIs", vec![s(), a()], false, |_, a| {
        Ok(Value::Bool(
            arg_str(&a[0]) == a[1].clone().unwrap_nil_interface().kind().name(),
        ))
    });
    add("deepEqual", vec![a(), a()], false, |_, a| {
        let (x, y) = (
            a[0].clone().unwrap_nil_interface(),
            a[1].clone().unwrap_nil_interface(),
        );
        Ok(Value::Bool(x.deep_equal(&y)))
    });
    add("base", vec![s()], false, |_, a| {
        Ok(Value::string(path_base(arg_str(&a[0]))))
    });
    add("dir", vec![s()], false, |_, a| {
        Ok(Value::string(path_dir(arg_str(&a[0]))))
    });
    add("clean", vec![s()], false, |_, a| {
        Ok(Value::string(path_clean(arg_str(&a[0]))))
    });
    add("ext", vec![s()], false, |_, a| {
        Ok(Value::string(path_ext(arg_str(&a[0]))))
    });
    add("isAbs", vec![s()], false, |_, a| {
        Ok(Value::Bool(arg_str(&a[0]).starts_with('/')))
    });
    add("osBase", vec![s()], false, |_, a| {
        Ok(Value::string(path_base(arg_str(&a[0]))))
    });
    add("osDir", vec![s()], false, |_, a| {
        Ok(Value::string(path_dir(arg_str(&a[0]))))
    });
    add("osClean", vec![s()], false, |_, a| {
        Ok(Value::string(path_clean(arg_str(&a[0]))))
    });
    add("osExt", vec![s()], false, |_, a| {
        Ok(Value::string(path_ext(arg_str(&a[0]))))
    });
    add("osIsAbs", vec![s()], false, |_, a| {
        Ok(Value::Bool(arg_str(&a[0]).starts_with('/')))
    });
    add("b64enc", vec![s()], false, |c, a| {
        use base64::Engine as _;
        str_result(
            c,
            base64::engine::general_purpose::STANDARD.encode(arg_str(&a[0]).as_bytes()),
        )
    });
    add("b64dec", vec![s()], false, |c, a| {
        str_result(c, b64dec(arg_str(&a[0])))
    });
    add("b32enc", vec![s()], false, |c, a| {
        str_result(c, b32enc(arg_str(&a[0])))
    });
    add("b32dec", vec![s()], false, |c, a| {
        str_result(c, b32dec(arg_str(&a[0])))
    });
    add("list", vec![a()], true, list_result);
    add("tuple", vec![a()], true, list_result);
    add("dict", vec![a()], true, |c, a| {
        c.check_len(a.len())?;
        let mut entries: Vec<(Value, Value)> = Vec::new();
        let mut k = 0;
        while k < a.len() {
            let key = Value::string(strval(&a[k]));
            let val = a.get(k + 1).cloned().unwrap_or_else(|| Value::str(""));
            entries.retain(|(e, _)| e.as_str() != key.as_str());
            entries.push((key, val));
            k += 2;
        }
        Ok(Value::map(dict_type(), entries))
    });
    add("get", vec![m(), s()], false, |_, a| {
        Ok(dict_get(&a[0], arg_str(&a[1])).unwrap_or_else(|| Value::str("")))
    });
    add("set", vec![m(), s(), a()], false, |_, a| {
        dict_set(&a[0], arg_str(&a[1]), a[2].clone())?;
        Ok(a[0].clone())
    });
    add("unset", vec![m(), s()], false, |_, a| {
        if let Value::Map(map) = &a[0] {
            map.entries
                .borrow_mut()
                .retain(|(k, _)| k.as_str() != Some(arg_str(&a[1])));
        }
        Ok(a[0].clone())
    });
    add("hasKey", vec![m(), s()], false, |_, a| {
        Ok(Value::Bool(dict_get(&a[0], arg_str(&a[1])).is_some()))
    });
    add("pluck", vec![s(), m()], true, |c, a| {
        let key = arg_str(&a[0]);
        let items: Vec<Value> = a[1..].iter().filter_map(|d| dict_get(d, key)).collect();
        list_result(c, items)
    });
    add("keys", vec![m()], true, |c, a| {
        let keys: Vec<String> = a
            .iter()
            .flat_map(|d| d.map_entries().into_iter().map(|(k, _)| strval(&k)))
            .collect();
        strings_result(c, keys)
    });
    add("values", vec![m()], false, |c, a| {
        list_result(c, a[0].map_entries().into_iter().map(|(_, v)| v).collect())
    });
    add("pick", vec![m(), s()], true, |_, a| {
        let keys: Vec<&str> = a[1..].iter().map(arg_str).collect();
        let entries = a[0]
            .map_entries()
            .into_iter()
            .filter(|(k, _)| keys.contains(&k.as_str().unwrap_or_default()))
            .collect();
        Ok(Value::map(dict_type(), entries))
    });
    add("omit", vec![m(), s()], true, |_, a| {
        let keys: Vec<&str> = a[1..].iter().map(arg_str).collect();
        let entries = a[0]
            .map_entries()
            .into_iter()
            .filter(|(k, _)| !keys.contains(&k.as_str().unwrap_or_default()))
            .collect();
        Ok(Value::map(dict_type(), entries))
    });
    for name in ["merge", "mustMerge", "mergeOverwrite", "mustMergeOverwrite"] {
        add(name, vec![m(), m()], true, unsupported);
    }
    fn push(c: &mut CallCtx, a: Vec<Value>) -> Res {
        let mut items = slice_of(&a[0], "push")?;
        items.push(a[1].clone());
        list_result(c, items)
    }
    add("append", vec![a(), a()], false, push);
    add("push", vec![a(), a()], false, push);
    add("mustAppend", vec![a(), a()], false, push);
    add("mustPush", vec![a(), a()], false, push);
    fn prepend(c: &mut CallCtx, a: Vec<Value>) -> Res {
        let mut items = slice_of(&a[0], "prepend")?;
        items.insert(0, a[1].clone());
        list_result(c, items)
    }
    add("prepend", vec![a(), a()], false, prepend);
    add("mustPrepend", vec![a(), a()], false, prepend);
    fn first(_: &mut CallCtx, a: Vec<Value>) -> Res {
        let items = slice_of(&a[0], "find first")?;
        Ok(items.first().cloned().unwrap_or(Value::Nil(Type::Any)))
    }
    add("first", vec![a()], false, first);
    add("mustFirst", vec![a()], false, first);
    fn last(_: &mut CallCtx, a: Vec<Value>) -> Res {
        let items = slice_of(&a[0], "find last")?;
        Ok(items.last().cloned().unwrap_or(Value::Nil(Type::Any)))
    }
    add("last", vec![a()], false, last);
    add("mustLast", vec![a()], false, last);
    fn rest(c: &mut CallCtx, a: Vec<Value>) -> Res {
        let items = slice_of(&a[0], "find rest")?;
        if items.is_empty() {
            return Ok(Value::Nil(Type::slice_of(Type::Any)));
        }
        list_result(c, items[1..].to_vec())
    }
    add("rest", vec![a()], false, rest);
    add("mustRest", vec![a()], false, rest);
    fn initial(c: &mut CallCtx, a: Vec<Value>) -> Res {
        let items = slice_of(&a[0], "find initial")?;
        if items.is_empty() {
            return Ok(Value::Nil(Type::slice_of(Type::Any)));
        }
        list_result(c, items[..items.len() - 1].to_vec())
    }
    add("initial", vec![a()], false, initial);
    add("mustInitial", vec![a()], false, initial);
    fn reverse(c: &mut CallCtx, a: Vec<Value>) -> Res {
        let mut items = slice_of(&a[0], "find reverse")?;
        items.reverse();
        list_result(c, items)
    }
    add("reverse", vec![a()], false, reverse);
    add("mustReverse", vec![a()], false, reverse);
    fn uniq(c: &mut CallCtx, a: Vec<Value>) -> Res {
        let items = slice_of(&a[0], "find uniq")?;
        c.check_len(items.len().saturating_mul(items.len()) / 16)?;
        let mut out: Vec<Value> = Vec::new();
        for it in items {
            if !out.iter().any(|o| o.deep_equal(&it)) {
                out.push(it);
            }
        }
        list_result(c, out)
    }
    add("uniq", vec![a()], false, uniq);
    add("mustUniq", vec![a()], false, uniq);
    fn without(c: &mut CallCtx, a: Vec<Value>) -> Res {
        let items = slice_of(&a[0], "find without")?;
        let omit = &a[1..];
        list_result(
            c,
            items
                .into_iter()
                .filter(|it| !omit.iter().any(|o| o.deep_equal(it)))
                .collect(),
        )
    }
    add("without", vec![a(), a()], true, without);
    add("mustWithout", vec![a(), a()], true, without);
    fn has(_: &mut CallCtx, a: Vec<Value>) -> Res {
        if is_nil(&a[1]) {
            return Ok(Value::Bool(false));
        }
        let items = slice_of(&a[1], "find has")?;
        Ok(Value::Bool(items.iter().any(|it| it.deep_equal(&a[0]))))
    }
    add("has", vec![a(), a()], false, has);
    add("mustHas", vec![a(), a()], false, has);
    fn sprig_slice(_: &mut CallCtx, a: Vec<Value>) -> Res {
        let ty = a[0].ty();
        let items = match &a[0] {
            Value::Slice(_) | Value::Nil(Type::Slice(_)) => {
                a[0].slice_items().unwrap_or(&[]).to_vec()
            }
            v if is_nil(v) => return msg(NIL_DEREF),
            v => {
                return msg(format!(
                    "list should be type of slice or array but {}",
                    v.kind().name()
                ));
            }
        };
        if items.is_empty() {
            return Ok(Value::Nil(Type::Any));
        }
        let start = a.get(1).map_or(0, to_int64);
        let end = a.get(2).map_or(items.len() as i64, to_int64);
        if start < 0 || end < start || end as usize > items.len() {
            return msg("reflect: slice index out of range");
        }
        Ok(Value::slice(
            ty.unwrap_or(Type::slice_of(Type::Any)),
            items[start as usize..end as usize].to_vec(),
        ))
    }
    add("slice", vec![a(), a()], true, sprig_slice);
    add("mustSlice", vec![a(), a()], true, sprig_slice);
    add("concat", vec![a()], true, |c, a| {
        let mut out: Vec<Value> = Vec::new();
        for l in &a {
            match l {
                Value::Slice(s) => out.extend(s.items.iter().cloned()),
                Value::Nil(Type::Slice(_)) => {}
                v if is_nil(v) => return msg(NIL_DEREF),
                v => return msg(format!("Cannot concat type {} as list", v.kind().name())),
            }
        }
        if out.is_empty() {
            return Ok(Value::Nil(Type::slice_of(Type::Any)));
        }
        list_result(c, out)
    });
    add("dig", vec![a()], true, |_, a| {
        if a.len() < 3 {
            return msg("dig needs at least three arguments");
        }
        let mut dict = a[a.len() - 1].clone();
        let default = a[a.len() - 2].clone();
        let keys = &a[..a.len() - 2];
        for (k, key) in keys.iter().enumerate() {
            let Some(key) = key.as_str() else {
                return msg(format!(
                    "interface conversion: interface {{}} is {}, not string",
                    key.type_name()
                ));
            };
            if dict.ty().is_none_or(|t| !t.same(&dict_type())) {
                return msg(format!(
                    "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                    dict.type_name()
                ));
            }
            match dict_get(&dict, key) {
                None => return Ok(default),
                Some(v) if k == keys.len() - 1 => return Ok(v),
                Some(v) => dict = v,
            }
        }
        Ok(default)
    });
    fn chunk(c: &mut CallCtx, a: Vec<Value>) -> Res {
        let size = arg_int(&a[0]);
        let items = slice_of(&a[1], "chunk")?;
        if size <= 0 {
            return msg("runtime error: integer divide by zero");
        }
        let chunks: Vec<Value> = items
            .chunks(size as usize)
            .map(|ch| Value::list(ch.to_vec()))
            .collect();
        c.check_len(chunks.len())?;
        Ok(Value::slice(
            Type::slice_of(Type::slice_of(Type::Any)),
            chunks,
        ))
    }
    add("chunk", vec![i(), a()], false, chunk);
    add("mustChunk", vec![i(), a()], false, chunk);
    add("fail", vec![s()], false, |_, a| {
        msg(arg_str(&a[0]).to_owned())
    });
}
