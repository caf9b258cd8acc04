//! Strings: case, trimming, abbreviation, quoting, paths, encodings, hashes.

use std::collections::HashMap;

use super::{
    Res, a, abbreviate_full, adler32, arg_int, arg_str, bytes_lossy, camel_to_lower, camelcase,
    go_title, go_trim_space, hex, i, initials, is_nil, msg, nospace, s, strval, substr, swapcase,
    untitle, wrap_custom,
};
use crate::funcs::FuncDef;
use crate::funcs::{CallCtx, CallError, Param, def, str_result};
use crate::gofmt;
use crate::unicode as u;
use crate::value::Value;

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
            return str_result(c, st.to_owned());
        }
        str_result(c, abbreviate_full(st, 0, w).unwrap_or_default())
    });
    add("abbrevboth", vec![i(), i(), s()], false, |c, a| {
        let (l, r) = (arg_int(&a[0]), arg_int(&a[1]));
        let st = arg_str(&a[2]);
        if r < 4 || (l > 0 && r < 7) {
            return str_result(c, st.to_owned());
        }
        str_result(c, abbreviate_full(st, l, r).unwrap_or_default())
    });
    add("trunc", vec![i(), s()], false, |c, a| {
        let n = arg_int(&a[0]);
        let b = arg_str(&a[1]).as_bytes();
        let len = b.len() as i64;
        let out = if n < 0 && len + n > 0 {
            bytes_lossy(&b[(len + n) as usize..])
        } else if n >= 0 && len > n {
            bytes_lossy(&b[..n as usize])
        } else {
            arg_str(&a[1]).to_owned()
        };
        str_result(c, out)
    });
    add("trim", vec![s()], false, |c, a| {
        str_result(c, go_trim_space(arg_str(&a[0])).to_owned())
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
        str_result(c, out)
    });
    add("repeat", vec![i(), s()], false, |c, a| {
        let n = arg_int(&a[0]);
        let st = arg_str(&a[1]);
        if n < 0 {
            return msg("strings: negative Repeat count");
        }
        c.check_len((n as usize).saturating_mul(st.len()))?;
        str_result(c, st.repeat(n as usize))
    });
    fn trim_all(c: &mut CallCtx, a: Vec<Value>) -> Res {
        let cut: Vec<char> = arg_str(&a[0]).chars().collect();
        str_result(
            c,
            arg_str(&a[1])
                .trim_matches(|ch| cut.contains(&ch))
                .to_owned(),
        )
    }
    add("trimall", vec![s(), s()], false, trim_all);
    add("trimAll", vec![s(), s()], false, trim_all);
    add("trimSuffix", vec![s(), s()], false, |c, a| {
        let (suf, st) = (arg_str(&a[0]), arg_str(&a[1]));
        str_result(c, st.strip_suffix(suf).unwrap_or(st).to_owned())
    });
    add("trimPrefix", vec![s(), s()], false, |c, a| {
        let (pre, st) = (arg_str(&a[0]), arg_str(&a[1]));
        str_result(c, st.strip_prefix(pre).unwrap_or(st).to_owned())
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
        str_result(c, wrap_custom(arg_str(&a[1]), arg_int(&a[0]), "", false))
    });
    add("wrapWith", vec![i(), s(), s()], false, |c, a| {
        str_result(
            c,
            wrap_custom(arg_str(&a[2]), arg_int(&a[0]), arg_str(&a[1]), true),
        )
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
        let parts: Vec<String> = a
            .iter()
            .filter(|v| !is_nil(v))
            .map(|v| gofmt::quote(&strval(v)))
            .collect();
        str_result(c, parts.join(" "))
    });
    add("squote", vec![a()], true, |c, a| {
        let parts: Vec<String> = a
            .iter()
            .filter(|v| !is_nil(v))
            .map(|v| format!("'{}'", gofmt::sprint_value(v)))
            .collect();
        str_result(c, parts.join(" "))
    });
    add("cat", vec![a()], true, |c, a| {
        let parts: Vec<String> = a
            .iter()
            .filter(|v| !is_nil(v))
            .map(gofmt::sprint_value)
            .collect();
        str_result(c, parts.join(" "))
    });
    fn indent(c: &mut CallCtx, n: i64, v: &str) -> Result<String, CallError> {
        if n < 0 {
            return msg("strings: negative Repeat count");
        }
        let lines = v.matches('\n').count() + 1;
        c.check_len((n as usize).saturating_mul(lines).saturating_add(v.len()))?;
        let pad = " ".repeat(n as usize);
        Ok(format!("{pad}{}", v.replace('\n', &format!("\n{pad}"))))
    }
    add("indent", vec![i(), s()], false, |c, a| {
        let out = indent(c, arg_int(&a[0]), arg_str(&a[1]))?;
        str_result(c, out)
    });
    add("nindent", vec![i(), s()], false, |c, a| {
        let out = indent(c, arg_int(&a[0]), arg_str(&a[1]))?;
        str_result(c, format!("\n{out}"))
    });
    add("replace", vec![s(), s(), s()], false, |c, a| {
        let (old, new, src) = (arg_str(&a[0]), arg_str(&a[1]), arg_str(&a[2]));
        let out = if old.is_empty() {
            // strings.Replace with an empty old inserts `new` around every rune.
            let mut o = String::from(new);
            for ch in src.chars() {
                o.push(ch);
                o.push_str(new);
            }
            o
        } else {
            src.replace(old, new)
        };
        str_result(c, out)
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
    add("toString", vec![a()], false, |c, a| {
        str_result(c, strval(&a[0]))
    });
}
