//! Regular expressions with Go's syntax: `regexMatch`, `regexFind`, `regexReplaceAll`...

use std::collections::HashMap;

use super::{
    arg_int, arg_str, find_all, go_regex, i, must_compile, regex_split, s, strings_result,
};
use crate::funcs::FuncDef;
use crate::funcs::{Param, def, str_result};
use crate::value::{Type, Value};

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
    add("regexFindAll", vec![s(), s(), i()], false, |c, a| {
        let re = must_compile(arg_str(&a[0]))?;
        let found = find_all(&re, arg_str(&a[1]), arg_int(&a[2]));
        if found.is_empty() {
            return Ok(Value::Nil(Type::slice_of(Type::String)));
        }
        strings_result(c, found)
    });
    add("mustRegexFindAll", vec![s(), s(), i()], false, |c, a| {
        let re = go_regex(arg_str(&a[0]))?;
        let found = find_all(&re, arg_str(&a[1]), arg_int(&a[2]));
        if found.is_empty() {
            return Ok(Value::Nil(Type::slice_of(Type::String)));
        }
        strings_result(c, found)
    });
    add("regexFind", vec![s(), s()], false, |c, a| {
        let re = must_compile(arg_str(&a[0]))?;
        str_result(
            c,
            re.find(arg_str(&a[1]))
                .map(|m| m.as_str().to_owned())
                .unwrap_or_default(),
        )
    });
    add("mustRegexFind", vec![s(), s()], false, |c, a| {
        let re = go_regex(arg_str(&a[0]))?;
        str_result(
            c,
            re.find(arg_str(&a[1]))
                .map(|m| m.as_str().to_owned())
                .unwrap_or_default(),
        )
    });
    add("regexReplaceAll", vec![s(), s(), s()], false, |c, a| {
        let re = must_compile(arg_str(&a[0]))?;
        str_result(
            c,
            re.replace_all(arg_str(&a[1]), arg_str(&a[2])).into_owned(),
        )
    });
    add("mustRegexReplaceAll", vec![s(), s(), s()], false, |c, a| {
        let re = go_regex(arg_str(&a[0]))?;
        str_result(
            c,
            re.replace_all(arg_str(&a[1]), arg_str(&a[2])).into_owned(),
        )
    });
    add(
        "regexReplaceAllLiteral",
        vec![s(), s(), s()],
        false,
        |c, a| {
            let re = must_compile(arg_str(&a[0]))?;
            str_result(
                c,
                re.replace_all(arg_str(&a[1]), regex::NoExpand(arg_str(&a[2])))
                    .into_owned(),
            )
        },
    );
    add(
        "mustRegexReplaceAllLiteral",
        vec![s(), s(), s()],
        false,
        |c, a| {
            let re = go_regex(arg_str(&a[0]))?;
            str_result(
                c,
                re.replace_all(arg_str(&a[1]), regex::NoExpand(arg_str(&a[2])))
                    .into_owned(),
            )
        },
    );
    add("regexSplit", vec![s(), s(), i()], false, |c, a| {
        let re = must_compile(arg_str(&a[0]))?;
        let parts = regex_split(&re, arg_str(&a[1]), arg_int(&a[2]));
        if parts.is_empty() {
            return Ok(Value::Nil(Type::slice_of(Type::String)));
        }
        strings_result(c, parts)
    });
    add("mustRegexSplit", vec![s(), s(), i()], false, |c, a| {
        let re = go_regex(arg_str(&a[0]))?;
        let parts = regex_split(&re, arg_str(&a[1]), arg_int(&a[2]));
        if parts.is_empty() {
            return Ok(Value::Nil(Type::slice_of(Type::String)));
        }
        strings_result(c, parts)
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
