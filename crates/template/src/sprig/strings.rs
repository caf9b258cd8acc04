//! Strings: case, trimming, abbreviation, quoting, paths, encodings, hashes.

use std::collections::HashMap;

use super::{
    Res, a, abbreviate_full, adler32, arg_int, arg_str, camel_to_lower, camelcase, go_title,
    go_trim_space, hex, i, initials, is_nil, lossy_value, msg, nospace, s, strval, strval_into,
    substr, swapcase, untitle, wrap_custom,
};
use crate::capped::Capped;
use crate::funcs::FuncDef;
use crate::funcs::{CallCtx, Param, def, str_result, str_slice};
use crate::gofmt;
use crate::unicode as u;
use crate::value::Value;

// Results no longer than a small multiple of an argument (case mapping, trimming, abbreviation)
// are charged once built (`str_result`): they cannot multiply memory. Parts of an argument are
// asked for before they are copied (`str_slice`, `lossy_value`); results that can be many times
// their arguments (`repeat`, `indent`, `replace`, `wrapWith`, `cat`, `quote`) are sized, or built
// within the room left, before they take memory.

/// Registers this family's functions.
pub(super) fn register(f: &mut HashMap<&'static str, FuncDef>) {
    let mut add =
        |name: &'static str, params: Vec<Param>, variadic: bool, imp: crate::funcs::Impl| {
            f.insert(name, def(params, variadic, imp));
        };
    add("abbrev", vec![i(), s()], false, |c, a| {
        let w = arg_int(&a[0]);
        let st = arg_str(&a[1]);
        if w < 4 {
            return str_slice(c, st);
        }
        str_result(c, abbreviate_full(st, 0, w).unwrap_or_default())
    });
    add("abbrevboth", vec![i(), i(), s()], false, |c, a| {
        let (l, r) = (arg_int(&a[0]), arg_int(&a[1]));
        let st = arg_str(&a[2]);
        if r < 4 || (l > 0 && r < 7) {
            return str_slice(c, st);
        }
        str_result(c, abbreviate_full(st, l, r).unwrap_or_default())
    });
    add("trunc", vec![i(), s()], false, |c, a| {
        let n = arg_int(&a[0]);
        let b = arg_str(&a[1]).as_bytes();
        let len = b.len() as i64;
        if n < 0 && len + n > 0 {
            lossy_value(c, &b[(len + n) as usize..])
        } else if n >= 0 && len > n {
            lossy_value(c, &b[..n as usize])
        } else {
            Ok(a[1].clone())
        }
    });
    add("trim", vec![s()], false, |c, a| {
        str_slice(c, go_trim_space(arg_str(&a[0])))
    });
    add("upper", vec![s()], false, |c, a| {
        str_result(c, arg_str(&a[0]).chars().map(u::to_upper).collect())
    });
    add("lower", vec![s()], false, |c, a| {
        str_result(c, arg_str(&a[0]).chars().map(u::to_lower).collect())
    });
    add("title", vec![s()], false, |c, a| {
        str_result(c, go_title(arg_str(&a[0])))
    });
    add("untitle", vec![s()], false, |c, a| {
        str_result(c, untitle(arg_str(&a[0])))
    });
    add("substr", vec![i(), i(), s()], false, |c, a| {
        let out = substr(arg_int(&a[0]), arg_int(&a[1]), arg_str(&a[2]))?;
        lossy_value(c, out)
    });
    add("repeat", vec![i(), s()], false, |c, a| {
        let n = arg_int(&a[0]);
        let st = arg_str(&a[1]);
        if n < 0 {
            return msg("strings: negative Repeat count");
        }
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        c.reserve_bytes(n.saturating_mul(st.len()))?;
        Ok(Value::string(st.repeat(n)))
    });
    fn trim_all(c: &mut CallCtx, a: Vec<Value>) -> Res {
        let cut: Vec<char> = arg_str(&a[0]).chars().collect();
        str_slice(c, arg_str(&a[1]).trim_matches(|ch| cut.contains(&ch)))
    }
    add("trimall", vec![s(), s()], false, trim_all);
    add("trimAll", vec![s(), s()], false, trim_all);
    add("trimSuffix", vec![s(), s()], false, |c, a| {
        let (suf, st) = (arg_str(&a[0]), arg_str(&a[1]));
        str_slice(c, st.strip_suffix(suf).unwrap_or(st))
    });
    add("trimPrefix", vec![s(), s()], false, |c, a| {
        let (pre, st) = (arg_str(&a[0]), arg_str(&a[1]));
        str_slice(c, st.strip_prefix(pre).unwrap_or(st))
    });
    add("nospace", vec![s()], false, |c, a| {
        str_result(c, nospace(arg_str(&a[0])))
    });
    add("initials", vec![s()], false, |c, a| {
        str_result(c, initials(arg_str(&a[0])))
    });
    add("swapcase", vec![s()], false, |c, a| {
        str_result(c, swapcase(arg_str(&a[0])))
    });
    add("snakecase", vec![s()], false, |c, a| {
        str_result(c, camel_to_lower(arg_str(&a[0]), '_'))
    });
    add("kebabcase", vec![s()], false, |c, a| {
        str_result(c, camel_to_lower(arg_str(&a[0]), '-'))
    });
    add("camelcase", vec![s()], false, |c, a| {
        str_result(c, camelcase(arg_str(&a[0])))
    });
    add("wrap", vec![i(), s()], false, |c, a| {
        let room = c.room();
        match wrap_custom(arg_str(&a[1]), arg_int(&a[0]), "", false, room) {
            Some(b) => lossy_value(c, &b),
            None => Err(c.too_long(room)),
        }
    });
    add("wrapWith", vec![i(), s(), s()], false, |c, a| {
        let room = c.room();
        match wrap_custom(arg_str(&a[2]), arg_int(&a[0]), arg_str(&a[1]), true, room) {
            Some(b) => lossy_value(c, &b),
            None => Err(c.too_long(room)),
        }
    });
    add("contains", vec![s(), s()], false, |_, a| {
        Ok(Value::Bool(arg_str(&a[1]).contains(arg_str(&a[0]))))
    });
    add("hasPrefix", vec![s(), s()], false, |_, a| {
        Ok(Value::Bool(arg_str(&a[1]).starts_with(arg_str(&a[0]))))
    });
    add("hasSuffix", vec![s(), s()], false, |_, a| {
        Ok(Value::Bool(arg_str(&a[1]).ends_with(arg_str(&a[0]))))
    });
    add("quote", vec![a()], true, |c, a| {
        let mut out = Capped::new(c.room());
        for (k, v) in a.iter().filter(|v| !is_nil(v)).enumerate() {
            if k > 0 {
                out.push(' ');
            }
            match v {
                Value::Str(s) => gofmt::quote_into(&mut out, s, '"', false),
                v => {
                    let mut text = Capped::new(out.cap());
                    strval_into(&mut text, v);
                    match text.finish() {
                        Some(text) => gofmt::quote_into(&mut out, &text, '"', false),
                        None => out.refuse(),
                    }
                }
            }
        }
        c.take(out)
    });
    add("squote", vec![a()], true, |c, a| {
        let mut out = Capped::new(c.room());
        for (k, v) in a.iter().filter(|v| !is_nil(v)).enumerate() {
            if k > 0 {
                out.push(' ');
            }
            out.push('\'');
            gofmt::print_value_into(&mut out, v);
            out.push('\'');
        }
        c.take(out)
    });
    add("cat", vec![a()], true, |c, a| {
        let mut out = Capped::new(c.room());
        for (k, v) in a.iter().filter(|v| !is_nil(v)).enumerate() {
            if k > 0 {
                out.push(' ');
            }
            gofmt::print_value_into(&mut out, v);
        }
        c.take(out)
    });
    /// Sprig's `indent`, after `lead` (`nindent`'s newline): sized and asked for first.
    fn indent(c: &mut CallCtx, lead: &str, n: i64, v: &str) -> Res {
        if n < 0 {
            return msg("strings: negative Repeat count");
        }
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        let lines = v.matches('\n').count() + 1;
        let size = n
            .checked_mul(lines)
            .and_then(|p| p.checked_add(v.len()))
            .and_then(|p| p.checked_add(lead.len()))
            .unwrap_or(usize::MAX);
        c.reserve_bytes(size)?;
        let pad = " ".repeat(n);
        let mut out = String::with_capacity(size);
        out.push_str(lead);
        for (k, line) in v.split('\n').enumerate() {
            if k > 0 {
                out.push('\n');
            }
            out.push_str(&pad);
            out.push_str(line);
        }
        Ok(Value::string(out))
    }
    add("indent", vec![i(), s()], false, |c, a| {
        indent(c, "", arg_int(&a[0]), arg_str(&a[1]))
    });
    add("nindent", vec![i(), s()], false, |c, a| {
        indent(c, "\n", arg_int(&a[0]), arg_str(&a[1]))
    });
    add("replace", vec![s(), s(), s()], false, |c, a| {
        let (old, new, src) = (arg_str(&a[0]), arg_str(&a[1]), arg_str(&a[2]));
        // strings.Replace with an empty old inserts `new` around every rune.
        let (count, removed) = if old.is_empty() {
            (src.chars().count() + 1, 0)
        } else {
            let k = src.matches(old).count();
            (k, k * old.len())
        };
        let size = count
            .checked_mul(new.len())
            .and_then(|p| p.checked_add(src.len() - removed))
            .unwrap_or(usize::MAX);
        c.reserve_bytes(size)?;
        let out = if old.is_empty() {
            let mut o = String::with_capacity(size);
            o.push_str(new);
            for ch in src.chars() {
                o.push(ch);
                o.push_str(new);
            }
            o
        } else {
            src.replace(old, new)
        };
        Ok(Value::string(out))
    });
    add("plural", vec![s(), s(), i()], false, |_, a| {
        Ok(if arg_int(&a[2]) == 1 {
            a[0].clone()
        } else {
            a[1].clone()
        })
    });
    add("sha1sum", vec![s()], false, |_, a| {
        use sha1::Digest as _;
        Ok(Value::string(hex(&sha1::Sha1::digest(
            arg_str(&a[0]).as_bytes(),
        ))))
    });
    add("sha256sum", vec![s()], false, |_, a| {
        use sha2::Digest as _;
        Ok(Value::string(hex(&sha2::Sha256::digest(
            arg_str(&a[0]).as_bytes(),
        ))))
    });
    add("adler32sum", vec![s()], false, |_, a| {
        Ok(Value::string(adler32(arg_str(&a[0])).to_string()))
    });
    add("toString", vec![a()], false, |c, a| strval(c, &a[0]));
}
