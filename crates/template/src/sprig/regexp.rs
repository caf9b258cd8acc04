//! Regular expressions with Go's syntax: `regexMatch`, `regexFind`, `regexReplaceAll`...

use std::collections::HashMap;

use super::{
    Res, arg_int, arg_str, find_all, go_regex, i, must_compile, regex_split, s, strings_of,
};
use crate::capped::Capped;
use crate::funcs::FuncDef;
use crate::funcs::{CallCtx, Param, def, str_result, str_slice};
use crate::value::{Type, Value};

/// `ReplaceAllString` (`$1` expanded) or `ReplaceAllLiteralString` within the room left: each
/// match may put a long replacement (or many copies of a long match) in a short place.
fn replace_all(c: &mut CallCtx, re: &regex::Regex, src: &str, repl: &str, literal: bool) -> Res {
    let mut out = Capped::new(c.room());
    let mut last = 0;
    for caps in re.captures_iter(src) {
        if out.over() {
            break;
        }
        let Some(m) = caps.get(0) else { continue };
        out.push_str(&src[last..m.start()]);
        if literal {
            out.push_str(repl);
        } else {
            expand(&caps, repl, &mut out);
        }
        last = m.end();
    }
    out.push_str(&src[last..]);
    c.take(out)
}

/// `Captures::expand` into a capped string, one `$` reference at a time, so that no expansion
/// is built whole before it is checked.
fn expand(caps: &regex::Captures<'_>, repl: &str, out: &mut Capped) {
    let mut rest = repl;
    let mut one = String::new();
    while !rest.is_empty() && !out.over() {
        // A piece is text up to the next `$`, or one reference (`$$` is a literal `$`) and the
        // text after it up to the next `$`; a reference's name cannot contain a `$`.
        let skip = if rest.starts_with("$$") {
            2
        } else {
            usize::from(rest.starts_with('$'))
        };
        let cut = rest[skip..].find('$').map_or(rest.len(), |i| skip + i);
        let (piece, tail) = rest.split_at(cut);
        one.clear();
        caps.expand(piece, &mut one);
        out.push_str(&one);
        rest = tail;
    }
}

/// Registers this family's functions.
pub(super) fn register(f: &mut HashMap<&'static str, FuncDef>) {
    let mut add =
        |name: &'static str, params: Vec<Param>, variadic: bool, imp: crate::funcs::Impl| {
            f.insert(name, def(params, variadic, imp));
        };
    add("regexMatch", vec![s(), s()], false, |_, a| {
        Ok(Value::Bool(
            go_regex(arg_str(&a[0])).is_ok_and(|re| re.is_match(arg_str(&a[1]))),
        ))
    });
    add("mustRegexMatch", vec![s(), s()], false, |_, a| {
        let re = go_regex(arg_str(&a[0]))?;
        Ok(Value::Bool(re.is_match(arg_str(&a[1]))))
    });
    /// `FindAllString`: nil when nothing matches.
    fn found(c: &mut CallCtx, re: &regex::Regex, s: &str, n: i64) -> Res {
        if find_all(re, s, n).next().is_none() {
            return Ok(Value::Nil(Type::slice_of(Type::String)));
        }
        strings_of(c, || find_all(re, s, n))
    }
    add("regexFindAll", vec![s(), s(), i()], false, |c, a| {
        let re = must_compile(arg_str(&a[0]))?;
        found(c, &re, arg_str(&a[1]), arg_int(&a[2]))
    });
    add("mustRegexFindAll", vec![s(), s(), i()], false, |c, a| {
        let re = go_regex(arg_str(&a[0]))?;
        found(c, &re, arg_str(&a[1]), arg_int(&a[2]))
    });
    add("regexFind", vec![s(), s()], false, |c, a| {
        let re = must_compile(arg_str(&a[0]))?;
        str_slice(c, re.find(arg_str(&a[1])).map_or("", |m| m.as_str()))
    });
    add("mustRegexFind", vec![s(), s()], false, |c, a| {
        let re = go_regex(arg_str(&a[0]))?;
        str_slice(c, re.find(arg_str(&a[1])).map_or("", |m| m.as_str()))
    });
    add("regexReplaceAll", vec![s(), s(), s()], false, |c, a| {
        let re = must_compile(arg_str(&a[0]))?;
        replace_all(c, &re, arg_str(&a[1]), arg_str(&a[2]), false)
    });
    add("mustRegexReplaceAll", vec![s(), s(), s()], false, |c, a| {
        let re = go_regex(arg_str(&a[0]))?;
        replace_all(c, &re, arg_str(&a[1]), arg_str(&a[2]), false)
    });
    add(
        "regexReplaceAllLiteral",
        vec![s(), s(), s()],
        false,
        |c, a| {
            let re = must_compile(arg_str(&a[0]))?;
            replace_all(c, &re, arg_str(&a[1]), arg_str(&a[2]), true)
        },
    );
    add(
        "mustRegexReplaceAllLiteral",
        vec![s(), s(), s()],
        false,
        |c, a| {
            let re = go_regex(arg_str(&a[0]))?;
            replace_all(c, &re, arg_str(&a[1]), arg_str(&a[2]), true)
        },
    );
    /// `Regexp.Split`: nil when there are no parts.
    fn split(c: &mut CallCtx, re: &regex::Regex, s: &str, n: i64) -> Res {
        if regex_split(re, s, n).next().is_none() {
            return Ok(Value::Nil(Type::slice_of(Type::String)));
        }
        strings_of(c, || regex_split(re, s, n))
    }
    add("regexSplit", vec![s(), s(), i()], false, |c, a| {
        let re = must_compile(arg_str(&a[0]))?;
        split(c, &re, arg_str(&a[1]), arg_int(&a[2]))
    });
    add("mustRegexSplit", vec![s(), s(), i()], false, |c, a| {
        let re = go_regex(arg_str(&a[0]))?;
        split(c, &re, arg_str(&a[1]), arg_int(&a[2]))
    });
    add("regexQuoteMeta", vec![s()], false, |c, a| {
        let mut out = String::new();
        for ch in arg_str(&a[0]).chars() {
            if "\\.+*?()|[]{}^$".contains(ch) {
                out.push('\\');
            }
            out.push(ch);
        }
        str_result(c, out)
    });
}
