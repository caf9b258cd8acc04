//! Lists and dicts: `list`, `first`, `uniq`, `dict`, `get`, `set`, `pluck`, `deepCopy`...

use std::collections::HashMap;

use super::{
    NIL_DEREF, Res, a, arg_int, arg_str, b32dec, b32enc, b64dec, deep_copy, dict_get, dict_set,
    dict_type, empty, i, is_nil, json_fn, list_of, m, msg, path_base, path_clean, path_dir,
    path_ext, s, slice_of, strslice, strslice_items, strval, strval_into, to_int64, unsupported,
};
use crate::capped::Capped;
use crate::funcs::FuncDef;
use crate::funcs::{CallCtx, CallError, Param, def, str_result, t};
use crate::value::{Type, Value};

// Every list and map is counted before it is made (`list_of`, `reserve_elements`): a list's
// elements are shared values, so its cost is its length, and copies of a list (`append`,
// `concat`...) pay for every element they copy.

/// Registers this family's functions.
pub(super) fn register(f: &mut HashMap<&'static str, FuncDef>) {
    let mut add =
        |name: &'static str, params: Vec<Param>, variadic: bool, imp: crate::funcs::Impl| {
            f.insert(name, def(params, variadic, imp));
        };
    add("join", vec![s(), a()], false, |c, a| {
        let sep = arg_str(&a[0]);
        let items: Vec<&Value> = strslice_items(&a[1])
            .iter()
            .filter(|x| !is_nil(x))
            .collect();
        // The size of the strings' part is known before anything is copied; printed elements
        // are printed within the room left.
        let strings = items
            .iter()
            .filter_map(|v| v.as_str())
            .try_fold(0usize, |n, s| n.checked_add(s.len()));
        let seps = sep.len().checked_mul(items.len().saturating_sub(1));
        match strings.zip(seps).and_then(|(a, b)| a.checked_add(b)) {
            Some(size) if size <= c.room() => {}
            // Refused, with the size it would have had.
            Some(size) => c.reserve_bytes(size)?,
            None => return Err(c.too_long(c.room())),
        }
        let mut out = Capped::new(c.room());
        for (k, v) in items.iter().enumerate() {
            if k > 0 {
                out.push_str(sep);
            }
            strval_into(&mut out, v);
        }
        c.take(out)
    });
    add("sortAlpha", vec![a()], false, |c, a| {
        let mut v = match &a[0] {
            Value::Slice(_) | Value::Nil(Type::Slice(_)) => strslice(c, &a[0])?,
            other => {
                c.reserve_elements(1)?;
                vec![strval(c, other)?]
            }
        };
        v.sort_by(|x, y| {
            x.as_str()
                .unwrap_or_default()
                .as_bytes()
                .cmp(y.as_str().unwrap_or_default().as_bytes())
        });
        Ok(Value::slice(Type::slice_of(Type::String), v))
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
        let kept = || items.iter().filter(|v| !empty(v)).cloned();
        list_of(c, kept().count(), kept())
    }
    add("compact", vec![a()], false, compact);
    add("mustCompact", vec![a()], false, compact);
    add(
        "fromJson",
        vec![s()],
        false,
        |c, a| match crate::json::decode(c, arg_str(&a[0])) {
            Err(CallError::Msg(_)) => Ok(Value::Nil(Type::Any)),
            r => r,
        },
    );
    add("mustFromJson", vec![s()], false, |c, a| {
        crate::json::decode(c, arg_str(&a[0]))
    });
    /// `toJson` and `toPrettyJson` give an empty string for a value Go cannot encode.
    fn or_empty(r: Res) -> Res {
        match r {
            Err(CallError::Msg(_)) => Ok(Value::str("")),
            r => r,
        }
    }
    add("toJson", vec![a()], false, |c, a| {
        or_empty(json_fn(c, &a[0], None, true))
    });
    add("toPrettyJson", vec![a()], false, |c, a| {
        or_empty(json_fn(c, &a[0], Some("  "), true))
    });
    add("toRawJson", vec![a()], false, |c, a| {
        json_fn(c, &a[0], None, false)
    });
    add("mustToJson", vec![a()], false, |c, a| {
        json_fn(c, &a[0], None, true)
    });
    add("mustToPrettyJson", vec![a()], false, |c, a| {
        json_fn(c, &a[0], Some("  "), true)
    });
    add("mustToRawJson", vec![a()], false, |c, a| {
        json_fn(c, &a[0], None, false)
    });
    add("ternary", vec![a(), a(), t(Type::Bool)], false, |_, a| {
        Ok(if a[2].truth() {
            a[0].clone()
        } else {
            a[1].clone()
        })
    });
    add("deepCopy", vec![a()], false, |c, a| deep_copy(c, &a[0], 0));
    add("mustDeepCopy", vec![a()], false, |c, a| {
        deep_copy(c, &a[0], 0)
    });
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
    // Go's `path` functions; the `os` forms are the same on Unix.
    for name in ["base", "osBase"] {
        add(name, vec![s()], false, |c, a| {
            str_result(c, path_base(arg_str(&a[0])))
        });
    }
    for name in ["dir", "osDir"] {
        add(name, vec![s()], false, |c, a| {
            str_result(c, path_dir(arg_str(&a[0])))
        });
    }
    for name in ["clean", "osClean"] {
        add(name, vec![s()], false, |c, a| {
            str_result(c, path_clean(arg_str(&a[0])))
        });
    }
    for name in ["ext", "osExt"] {
        add(name, vec![s()], false, |c, a| {
            str_result(c, path_ext(arg_str(&a[0])))
        });
    }
    for name in ["isAbs", "osIsAbs"] {
        add(name, vec![s()], false, |_, a| {
            Ok(Value::Bool(arg_str(&a[0]).starts_with('/')))
        });
    }
    add("b64enc", vec![s()], false, |c, a| {
        use base64::Engine as _;
        let b = arg_str(&a[0]).as_bytes();
        c.reserve_bytes(b.len().div_ceil(3).saturating_mul(4))?;
        Ok(Value::string(
            base64::engine::general_purpose::STANDARD.encode(b),
        ))
    });
    add("b64dec", vec![s()], false, |c, a| {
        str_result(c, b64dec(arg_str(&a[0])))
    });
    add("b32enc", vec![s()], false, |c, a| {
        let st = arg_str(&a[0]);
        c.reserve_bytes(st.len().div_ceil(5).saturating_mul(8))?;
        Ok(Value::string(b32enc(st)))
    });
    add("b32dec", vec![s()], false, |c, a| {
        str_result(c, b32dec(arg_str(&a[0])))
    });
    /// `list`: the arguments are the elements (no copy).
    fn list(c: &mut CallCtx, a: Vec<Value>) -> Res {
        c.reserve_elements(a.len())?;
        Ok(Value::list(a))
    }
    add("list", vec![a()], true, list);
    add("tuple", vec![a()], true, list);
    add("dict", vec![a()], true, |c, a| {
        c.reserve_elements(a.len().saturating_add(1) / 2 * 2)?;
        let mut entries: Vec<(Value, Value)> = Vec::with_capacity(a.len().div_ceil(2));
        let mut k = 0;
        while k < a.len() {
            let key = strval(c, &a[k])?;
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
    add("set", vec![m(), s(), a()], false, |c, a| {
        dict_set(c, &a[0], arg_str(&a[1]), a[2].clone())?;
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
        let found = || a[1..].iter().filter_map(|d| dict_get(d, key));
        list_of(c, found().count(), found())
    });
    add("keys", vec![m()], true, |c, a| {
        // map[string]interface{} keys are strings: shared, not copied.
        let n = a
            .iter()
            .map(|d| d.go_len().unwrap_or(0))
            .try_fold(0usize, usize::checked_add)
            .unwrap_or(usize::MAX);
        c.reserve_elements(n)?;
        let mut keys = Vec::with_capacity(n);
        for d in &a {
            if let Value::Map(map) = d {
                keys.extend(map.entries.borrow().iter().map(|(k, _)| k.clone()));
            }
        }
        Ok(Value::slice(Type::slice_of(Type::String), keys))
    });
    add("values", vec![m()], false, |c, a| {
        let Value::Map(map) = &a[0] else {
            return list_of(c, 0, std::iter::empty());
        };
        let entries = map.entries.borrow();
        list_of(c, entries.len(), entries.iter().map(|(_, v)| v.clone()))
    });
    /// `pick` (`keep`) and `omit`: the entries whose key is (or is not) named.
    fn pick_or_omit(c: &mut CallCtx, a: &[Value], keep: bool) -> Res {
        let keys: Vec<&str> = a[1..].iter().map(arg_str).collect();
        let Value::Map(map) = &a[0] else {
            return Ok(Value::map(dict_type(), Vec::new()));
        };
        let from = map.entries.borrow();
        let chosen = || {
            from.iter()
                .filter(|(k, _)| keys.contains(&k.as_str().unwrap_or_default()) == keep)
        };
        let n = chosen().count();
        c.reserve_elements(n.saturating_mul(2))?;
        let mut entries = Vec::with_capacity(n);
        entries.extend(chosen().cloned());
        Ok(Value::map(dict_type(), entries))
    }
    add("pick", vec![m(), s()], true, |c, a| {
        pick_or_omit(c, &a, true)
    });
    add("omit", vec![m(), s()], true, |c, a| {
        pick_or_omit(c, &a, false)
    });
    for name in ["merge", "mustMerge", "mergeOverwrite", "mustMergeOverwrite"] {
        add(name, vec![m(), m()], true, unsupported);
    }
    fn push(c: &mut CallCtx, a: Vec<Value>) -> Res {
        let items = slice_of(&a[0], "push")?;
        let all = items.iter().chain(std::iter::once(&a[1])).cloned();
        list_of(c, items.len().saturating_add(1), all)
    }
    add("append", vec![a(), a()], false, push);
    add("push", vec![a(), a()], false, push);
    add("mustAppend", vec![a(), a()], false, push);
    add("mustPush", vec![a(), a()], false, push);
    fn prepend(c: &mut CallCtx, a: Vec<Value>) -> Res {
        let items = slice_of(&a[0], "prepend")?;
        let all = std::iter::once(&a[1]).chain(items).cloned();
        list_of(c, items.len().saturating_add(1), all)
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
        list_of(c, items.len() - 1, items[1..].iter().cloned())
    }
    add("rest", vec![a()], false, rest);
    add("mustRest", vec![a()], false, rest);
    fn initial(c: &mut CallCtx, a: Vec<Value>) -> Res {
        let items = slice_of(&a[0], "find initial")?;
        if items.is_empty() {
            return Ok(Value::Nil(Type::slice_of(Type::Any)));
        }
        list_of(c, items.len() - 1, items[..items.len() - 1].iter().cloned())
    }
    add("initial", vec![a()], false, initial);
    add("mustInitial", vec![a()], false, initial);
    fn reverse(c: &mut CallCtx, a: Vec<Value>) -> Res {
        let items = slice_of(&a[0], "find reverse")?;
        list_of(c, items.len(), items.iter().rev().cloned())
    }
    add("reverse", vec![a()], false, reverse);
    add("mustReverse", vec![a()], false, reverse);
    fn uniq(c: &mut CallCtx, a: Vec<Value>) -> Res {
        let items = slice_of(&a[0], "find uniq")?;
        // Comparing every pair is work: asked for before it starts.
        c.work((items.len() as u64).saturating_mul(items.len() as u64) / 16)?;
        c.reserve_elements(items.len())?;
        let mut out: Vec<Value> = Vec::new();
        for it in items {
            if !out.iter().any(|o| o.deep_equal(it)) {
                out.push(it.clone());
            }
        }
        Ok(Value::list(out))
    }
    add("uniq", vec![a()], false, uniq);
    add("mustUniq", vec![a()], false, uniq);
    fn without(c: &mut CallCtx, a: Vec<Value>) -> Res {
        let items = slice_of(&a[0], "find without")?;
        let omit = &a[1..];
        let kept = || {
            items
                .iter()
                .filter(|it| !omit.iter().any(|o| o.deep_equal(it)))
                .cloned()
        };
        list_of(c, kept().count(), kept())
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
    fn sprig_slice(c: &mut CallCtx, a: Vec<Value>) -> Res {
        let ty = a[0].ty();
        let items = match &a[0] {
            Value::Slice(_) | Value::Nil(Type::Slice(_)) => a[0].slice_items().unwrap_or(&[]),
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
        let part = &items[start as usize..end as usize];
        c.reserve_elements(part.len())?;
        Ok(Value::slice(
            ty.unwrap_or(Type::slice_of(Type::Any)),
            part.to_vec(),
        ))
    }
    add("slice", vec![a(), a()], true, sprig_slice);
    add("mustSlice", vec![a(), a()], true, sprig_slice);
    add("concat", vec![a()], true, |c, a| {
        let mut n = 0usize;
        for l in &a {
            match l {
                Value::Slice(s) => n = n.saturating_add(s.items.len()),
                Value::Nil(Type::Slice(_)) => {}
                v if is_nil(v) => return msg(NIL_DEREF),
                v => return msg(format!("Cannot concat type {} as list", v.kind().name())),
            }
        }
        if n == 0 {
            return Ok(Value::Nil(Type::slice_of(Type::Any)));
        }
        let all = a
            .iter()
            .flat_map(|l| l.slice_items().unwrap_or(&[]))
            .cloned();
        list_of(c, n, all)
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
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        let n = items.len().div_ceil(size);
        c.reserve_elements(n)?;
        c.reserve_parts(n, items.len(), 0, 0)?;
        let chunks: Vec<Value> = items
            .chunks(size)
            .map(|ch| Value::list(ch.to_vec()))
            .collect();
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
