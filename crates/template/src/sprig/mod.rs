//! Sprig's hermetic functions (`sprig.HermeticTxtFuncMap`, Sprig 3.2), as Flux gives them to commit
//! message templates.
//!
//! Every name of the hermetic map parses (Go checks names at parse time); the functions below are
//! implemented with Sprig's semantics, including its quirks (byte-wise `trunc`, `nospace` and
//! `initials`, `default` by emptiness, panics that Go reports as `error calling NAME: ...`). The rest
//! fail when executed with [`crate::ExecErrorKind::Unsupported`]: crypto key and certificate
//! generation, random functions, dates, `semver`, `urlParse`, `merge` and decimal float arithmetic.

mod collections;
mod numbers;
mod regexp;
mod strings;

use std::collections::HashMap;

use crate::capped::{Capped, lossy_len};
use crate::funcs::{CallCtx, CallError, FuncDef, Param, def, t};
use crate::gofmt;
use crate::unicode as u;
use crate::value::{Kind, Type, Value};

/// Every function name of Sprig 3.2.3's `HermeticTxtFuncMap`.
pub const HERMETIC_NAMES: &[&str] = &[
    "abbrev",
    "abbrevboth",
    "add",
    "add1",
    "add1f",
    "addf",
    "adler32sum",
    "ago",
    "all",
    "any",
    "append",
    "atoi",
    "b32dec",
    "b32enc",
    "b64dec",
    "b64enc",
    "base",
    "bcrypt",
    "biggest",
    "buildCustomCert",
    "camelcase",
    "cat",
    "ceil",
    "chunk",
    "clean",
    "coalesce",
    "compact",
    "concat",
    "contains",
    "decryptAES",
    "deepCopy",
    "deepEqual",
    "default",
    "derivePassword",
    "dict",
    "dig",
    "dir",
    "div",
    "divf",
    "duration",
    "durationRound",
    "empty",
    "encryptAES",
    "ext",
    "fail",
    "first",
    "float64",
    "floor",
    "fromJson",
    "genCA",
    "genCAWithKey",
    "genPrivateKey",
    "genSelfSignedCert",
    "genSelfSignedCertWithKey",
    "genSignedCert",
    "genSignedCertWithKey",
    "get",
    "has",
    "hasKey",
    "hasPrefix",
    "hasSuffix",
    "hello",
    "htpasswd",
    "indent",
    "initial",
    "initials",
    "int",
    "int64",
    "isAbs",
    "join",
    "kebabcase",
    "keys",
    "kindIs",
    "kindOf",
    "last",
    "list",
    "lower",
    "max",
    "maxf",
    "merge",
    "mergeOverwrite",
    "min",
    "minf",
    "mod",
    "mul",
    "mulf",
    "mustAppend",
    "mustChunk",
    "mustCompact",
    "mustDateModify",
    "mustDeepCopy",
    "mustFirst",
    "mustFromJson",
    "mustHas",
    "mustInitial",
    "mustLast",
    "mustMerge",
    "mustMergeOverwrite",
    "mustPrepend",
    "mustPush",
    "mustRegexFind",
    "mustRegexFindAll",
    "mustRegexMatch",
    "mustRegexReplaceAll",
    "mustRegexReplaceAllLiteral",
    "mustRegexSplit",
    "mustRest",
    "mustReverse",
    "mustSlice",
    "mustToDate",
    "mustToJson",
    "mustToPrettyJson",
    "mustToRawJson",
    "mustUniq",
    "mustWithout",
    "must_date_modify",
    "nindent",
    "nospace",
    "omit",
    "osBase",
    "osClean",
    "osDir",
    "osExt",
    "osIsAbs",
    "pick",
    "pluck",
    "plural",
    "prepend",
    "push",
    "quote",
    "randInt",
    "regexFind",
    "regexFindAll",
    "regexMatch",
    "regexQuoteMeta",
    "regexReplaceAll",
    "regexReplaceAllLiteral",
    "regexSplit",
    "repeat",
    "replace",
    "rest",
    "reverse",
    "round",
    "semver",
    "semverCompare",
    "seq",
    "set",
    "sha1sum",
    "sha256sum",
    "shuffle",
    "slice",
    "snakecase",
    "sortAlpha",
    "split",
    "splitList",
    "splitn",
    "squote",
    "sub",
    "subf",
    "substr",
    "swapcase",
    "ternary",
    "title",
    "toDate",
    "toDecimal",
    "toJson",
    "toPrettyJson",
    "toRawJson",
    "toString",
    "toStrings",
    "trim",
    "trimAll",
    "trimPrefix",
    "trimSuffix",
    "trimall",
    "trunc",
    "tuple",
    "typeIs",
    "typeIsLike",
    "typeOf",
    "uniq",
    "unixEpoch",
    "unset",
    "until",
    "untilStep",
    "untitle",
    "upper",
    "urlJoin",
    "urlParse",
    "values",
    "without",
    "wrap",
    "wrapWith",
];

type Res = Result<Value, CallError>;

fn s() -> Param {
    t(Type::String)
}
fn i() -> Param {
    t(Type::Int)
}
fn a() -> Param {
    t(Type::Any)
}
fn m() -> Param {
    t(dict_type())
}

fn dict_type() -> Type {
    Type::map_of(Type::String, Type::Any)
}

fn arg_str(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn arg_int(v: &Value) -> i64 {
    match v {
        Value::Int(i, _) => *i,
        _ => 0,
    }
}

fn msg<T>(m: impl Into<String>) -> Result<T, CallError> {
    Err(CallError::Msg(m.into()))
}

fn is_nil(v: &Value) -> bool {
    matches!(v, Value::Invalid | Value::Nil(Type::Any))
}

const NIL_DEREF: &str = "runtime error: invalid memory address or nil pointer dereference";

/// Sprig's `strval` appended to `out`.
fn strval_into(out: &mut Capped, v: &Value) {
    match v {
        Value::Str(s) => out.push_str(s),
        v => gofmt::print_value_into(out, v),
    }
}

/// Sprig's `strval` as a string value: a string is itself (shared, not copied), anything else is
/// printed within the room left.
fn strval(c: &mut CallCtx, v: &Value) -> Res {
    if let Value::Str(_) = v {
        return Ok(v.clone());
    }
    let mut out = Capped::new(c.room());
    gofmt::print_value_into(&mut out, v);
    c.take(out)
}

/// Sprig's `empty`.
pub fn empty(v: &Value) -> bool {
    match v {
        Value::Invalid | Value::Nil(_) => true,
        Value::Str(s) => s.is_empty(),
        Value::Slice(s) => s.items.is_empty(),
        Value::Map(m) => m.entries.borrow().is_empty(),
        Value::Bool(b) => !*b,
        Value::Int(i, _) => *i == 0,
        Value::Float(f) => *f == 0.0,
        Value::Complex(r, i) => *r == 0.0 && *i == 0.0,
        Value::Struct(_) => false,
    }
}

/// `strings.TrimZeroDecimal` from spf13/cast.
fn trim_zero_decimal(s: &str) -> &str {
    let b = s.as_bytes();
    let mut found_zero = false;
    let mut i = b.len();
    while i > 0 {
        match b[i - 1] {
            b'.' => {
                if found_zero {
                    return &s[..i - 1];
                }
            }
            b'0' => found_zero = true,
            _ => return s,
        }
        i -= 1;
    }
    s
}

/// spf13/cast `ToInt64` (errors give 0).
pub fn to_int64(v: &Value) -> i64 {
    match v {
        Value::Int(i, _) => *i,
        Value::Float(f) => float_to_int(*f),
        Value::Str(s) => crate::parse::parse_int0(trim_zero_decimal(s)).unwrap_or(0),
        Value::Bool(b) => i64::from(*b),
        _ => 0,
    }
}

fn float_to_int(f: f64) -> i64 {
    if f.is_nan() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
        return i64::MIN;
    }
    f as i64
}

/// spf13/cast `ToFloat64` (errors give 0).
fn to_float64(v: &Value) -> f64 {
    match v {
        Value::Int(i, _) => *i as f64,
        Value::Float(f) => *f,
        Value::Str(s) => go_parse_float(s).unwrap_or(0.0),
        Value::Bool(b) => f64::from(u8::from(*b)),
        _ => 0.0,
    }
}

fn go_parse_float(s: &str) -> Option<f64> {
    let l = s.to_ascii_lowercase();
    let body = l.trim_start_matches(['+', '-']);
    match body {
        "inf" | "infinity" => {
            return Some(if l.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            });
        }
        "nan" => return Some(f64::NAN),
        _ => {}
    }
    crate::parse::parse_float(s)
}

/// What Sprig's `strslice` reads: a slice's elements, or a value on its own.
fn strslice_items(v: &Value) -> &[Value] {
    match v {
        Value::Slice(s) => &s.items,
        Value::Nil(t) if t.kind() == Kind::Slice => &[],
        v if is_nil(v) => &[],
        v => std::slice::from_ref(v),
    }
}

/// Sprig's `strslice` (`toStrings`, `sortAlpha`): every non-nil element as a string value
/// (strings shared, others printed), charged before the list is made.
fn strslice(c: &mut CallCtx, v: &Value) -> Result<Vec<Value>, CallError> {
    let items = strslice_items(v);
    let n = items.iter().filter(|x| !is_nil(x)).count();
    c.reserve_elements(n)?;
    let mut out = Vec::with_capacity(n);
    for x in items.iter().filter(|x| !is_nil(x)) {
        out.push(strval(c, x)?);
    }
    Ok(out)
}

/// The elements of a list argument, borrowed.
fn slice_of<'v>(v: &'v Value, what: &str) -> Result<&'v [Value], CallError> {
    match v {
        Value::Slice(s) => Ok(&s.items),
        Value::Nil(t) if t.kind() == Kind::Slice => Ok(&[]),
        v if is_nil(v) => msg(NIL_DEREF),
        v => msg(format!("Cannot {what} on type {}", v.kind().name())),
    }
}

/// A `[]interface {}` of the elements `items` yields, `n` of them, asked for before it is made.
fn list_of(c: &mut CallCtx, n: usize, items: impl Iterator<Item = Value>) -> Res {
    c.reserve_elements(n)?;
    let mut out = Vec::with_capacity(n);
    out.extend(items.take(n));
    Ok(Value::list(out))
}

/// A `[]string` of the parts `parts` yields: counted and measured first, then charged, then made.
fn strings_of<'s, I: Iterator<Item = &'s str>>(c: &mut CallCtx, parts: impl Fn() -> I) -> Res {
    let (n, bytes) = parts().fold((0usize, 0usize), |(n, b), p| {
        (n.saturating_add(1), b.saturating_add(p.len()))
    });
    c.reserve_strings(n, bytes)?;
    let mut out = Vec::with_capacity(n);
    out.extend(parts().map(Value::str));
    Ok(Value::slice(Type::slice_of(Type::String), out))
}

/// `split`/`splitn`: a `map[string]string` from `_0`, `_1`... to the parts, counted and charged
/// first.
fn map_ss<'s, I: Iterator<Item = &'s str>>(c: &mut CallCtx, parts: impl Fn() -> I) -> Res {
    let (n, bytes) = parts()
        .enumerate()
        .fold((0usize, 0usize), |(n, b), (i, p)| {
            let key = 1 + i.checked_ilog10().unwrap_or(0) as usize + 1;
            (
                n.saturating_add(1),
                b.saturating_add(p.len()).saturating_add(key),
            )
        });
    c.reserve_strings(n.saturating_mul(2), bytes)?;
    let mut entries = Vec::with_capacity(n);
    entries.extend(
        parts()
            .enumerate()
            .map(|(i, p)| (Value::string(format!("_{i}")), Value::str(p))),
    );
    Ok(Value::map(
        Type::map_of(Type::String, Type::String),
        entries,
    ))
}

/// `strings.SplitN`'s parts, one by one (`n` < 0: all of them).
fn go_split<'s>(s: &'s str, sep: &'s str, n: i64) -> Box<dyn Iterator<Item = &'s str> + 's> {
    if n == 0 {
        return Box::new(std::iter::empty());
    }
    if sep.is_empty() {
        // Go's `explode`: one rune each, the last part the rest.
        let count = s.chars().count();
        let limit = match usize::try_from(n) {
            Ok(n) if n <= count => n,
            _ => count,
        };
        let mut rest = s;
        let mut k = 0;
        return Box::new(std::iter::from_fn(move || {
            if k >= limit {
                return None;
            }
            k += 1;
            let end = if k == limit {
                rest.len()
            } else {
                rest.chars().next().map_or(rest.len(), char::len_utf8)
            };
            let (part, tail) = rest.split_at(end);
            rest = tail;
            Some(part)
        }));
    }
    match usize::try_from(n) {
        Ok(n) => Box::new(s.splitn(n, sep)),
        Err(_) => Box::new(s.split(sep)),
    }
}

fn go_title(s: &str) -> String {
    let mut prev = ' ';
    s.chars()
        .map(|c| {
            let sep = if (prev as u32) <= 0x7F {
                !(prev.is_ascii_alphanumeric() || prev == '_')
            } else if u::is_letter(prev) || u::is_digit(prev) {
                false
            } else {
                u::is_space(prev)
            };
            prev = c;
            if sep { u::to_title(c) } else { c }
        })
        .collect()
}

fn go_trim_space(s: &str) -> &str {
    s.trim_matches(u::is_space)
}

fn bytes_lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Bytes (cut from a string) as a string value, their length asked for before they are copied.
fn lossy_value(c: &mut CallCtx, b: &[u8]) -> Res {
    c.reserve_bytes(lossy_len(b))?;
    Ok(Value::string(bytes_lossy(b)))
}

fn runtime_slice_err(a: usize, b: Option<usize>, len: usize, tail: bool) -> CallError {
    match (b, tail) {
        (Some(b), false) if b > len => CallError::Msg(format!(
            "runtime error: slice bounds out of range [:{b}] with length {len}"
        )),
        (Some(b), false) => CallError::Msg(format!(
            "runtime error: slice bounds out of range [{a}:{b}]"
        )),
        _ => CallError::Msg(format!(
            "runtime error: slice bounds out of range [{a}:{len}]"
        )),
    }
}

/// Sprig's `substr`: the bytes it cuts (Go slices bytes).
fn substr(start: i64, end: i64, s: &str) -> Result<&[u8], CallError> {
    let b = s.as_bytes();
    let len = b.len();
    if start < 0 {
        if end < 0 {
            return Err(CallError::Msg(format!(
                "runtime error: slice bounds out of range [:{end}]"
            )));
        }
        let e = end as usize;
        if e > len {
            return Err(runtime_slice_err(0, Some(e), len, false));
        }
        return Ok(&b[..e]);
    }
    let st = start as usize;
    if end < 0 || end as usize > len {
        if st > len {
            return Err(runtime_slice_err(st, None, len, true));
        }
        return Ok(&b[st..]);
    }
    let e = end as usize;
    if st > e {
        return Err(runtime_slice_err(st, Some(e), len, false));
    }
    Ok(&b[st..e])
}

fn abbreviate_full(s: &str, offset: i64, max_width: i64) -> Option<String> {
    let b = s.as_bytes();
    let len = b.len() as i64;
    if s.is_empty() {
        return Some(String::new());
    }
    if max_width < 4 {
        return None;
    }
    if len <= max_width {
        return Some(s.to_owned());
    }
    let mut offset = offset.min(len);
    if len - offset < max_width - 3 {
        offset = len - (max_width - 3);
    }
    if offset <= 4 {
        return Some(format!(
            "{}...",
            bytes_lossy(&b[..(max_width - 3) as usize])
        ));
    }
    if max_width < 7 {
        return None;
    }
    if offset + max_width - 3 < len {
        let inner = abbreviate_full(&bytes_lossy(&b[offset as usize..]), 0, max_width - 3)?;
        return Some(format!("...{inner}"));
    }
    Some(format!(
        "...{}",
        bytes_lossy(&b[(len - (max_width - 3)) as usize..])
    ))
}

/// goutils' `WrapCustom`: the bytes (Go cuts bytes), or `None` past `cap` (each break adds
/// `new_line`, so the result may be many times the text).
fn wrap_custom(
    s: &str,
    wrap_length: i64,
    new_line: &str,
    wrap_long: bool,
    cap: usize,
) -> Option<Vec<u8>> {
    if s.is_empty() {
        return Some(Vec::new());
    }
    let new_line = if new_line.is_empty() { "\n" } else { new_line };
    let wl = usize::try_from(wrap_length.max(1)).unwrap_or(usize::MAX);
    let b = s.as_bytes();
    let len = b.len();
    let mut offset = 0usize;
    let mut out: Vec<u8> = Vec::new();
    // Each line and its break are checked against the cap before they are copied.
    let line = |out: &mut Vec<u8>, text: &[u8], brk: bool| -> Option<()> {
        let add = text
            .len()
            .checked_add(if brk { new_line.len() } else { 0 })?;
        if out.len().checked_add(add)? > cap {
            return None;
        }
        out.extend_from_slice(text);
        if brk {
            out.extend_from_slice(new_line.as_bytes());
        }
        Some(())
    };
    while len - offset > wl {
        if b[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = (wl + offset + 1).min(len);
        let space = b[offset..end].iter().rposition(|c| *c == b' ');
        if let Some(sp) = space {
            let at = sp + offset;
            line(&mut out, &b[offset..at], true)?;
            offset = at + 1;
        } else if wrap_long {
            let end = wl + offset;
            line(&mut out, &b[offset..end], true)?;
            offset += wl;
        } else {
            let end = wl + offset;
            match b[end..].iter().position(|c| *c == b' ') {
                None => {
                    line(&mut out, &b[offset..], false)?;
                    offset = len;
                }
                Some(idx) => {
                    let at = idx + end;
                    line(&mut out, &b[offset..at], true)?;
                    offset = at + 1;
                }
            }
        }
    }
    line(&mut out, &b[offset..], false)?;
    Some(out)
}

/// Bytes read as runes one by one, the way goutils' byte loops do (non-ASCII bytes become Latin-1).
fn byte_rune(b: u8) -> char {
    char::from(b)
}

fn nospace(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::new();
    let mut count = 0;
    for &c in b {
        let r = byte_rune(c);
        if !u::is_space(r) {
            out.push(r);
            count += 1;
        }
    }
    if count == b.len() {
        return s.to_owned();
    }
    out
}

fn initials(s: &str) -> String {
    let mut out = String::new();
    let mut last_gap = true;
    for &c in s.as_bytes() {
        let r = byte_rune(c);
        if u::is_space(r) {
            last_gap = true;
        } else if last_gap {
            out.push(r);
            last_gap = false;
        }
    }
    out
}

fn untitle(s: &str) -> String {
    let mut next = true;
    s.chars()
        .map(|c| {
            if u::is_space(c) {
                next = true;
                c
            } else if next {
                next = false;
                u::to_lower(c)
            } else {
                c
            }
        })
        .collect()
}

fn swapcase(s: &str) -> String {
    s.chars()
        .map(|c| {
            if u::is_upper(c) {
                u::to_lower(c)
            } else if u::is_lower(c) {
                u::to_upper(c)
            } else {
                c
            }
        })
        .collect()
}

// --- xstrings 1.3.3 case conversion -------------------------------------------------------------

fn is_connector(c: char) -> bool {
    c == '-' || c == '_' || u::is_space(c)
}

fn is_alphabet(c: char) -> bool {
    if !u::is_letter(c) {
        return false;
    }
    let cp = c as u32;
    if cp < 0x1100 {
        return true;
    }
    // CJK and other scripts without case are not "alphabet" in xstrings.
    !((0x4E00..=0x9FCC).contains(&cp)
        || (0x3400..=0x4DB5).contains(&cp)
        || (0x20000..=0x2A6D6).contains(&cp)
        || (0x2A700..=0x2B734).contains(&cp)
        || (0x2B740..=0x2B81D).contains(&cp)
        || (0x3040..=0x309F).contains(&cp)
        || (0x30A0..=0x30FF).contains(&cp)
        || (0x1100..=0x11FF).contains(&cp)
        || (0x3130..=0x318F).contains(&cp)
        || (0xAC00..=0xD7AF).contains(&cp))
}

fn camelcase(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let mut idx = 0;
    let mut r0 = '\0';
    let mut size_nonzero = false;
    while idx < chars.len() {
        r0 = chars[idx];
        idx += 1;
        size_nonzero = true;
        if !is_connector(r0) {
            r0 = u::to_upper(r0);
            break;
        }
        out.push(r0);
    }
    if idx >= chars.len() {
        // xstrings writes the last rune again here, even when it was a connector already written.
        if size_nonzero {
            out.push(r0);
        }
        return out;
    }
    while idx < chars.len() {
        let r1 = r0;
        r0 = chars[idx];
        idx += 1;
        if is_connector(r0) && is_connector(r1) {
            out.push(r1);
            continue;
        }
        if is_connector(r1) {
            r0 = u::to_upper(r0);
        } else {
            r0 = u::to_lower(r0);
            out.push(r1);
        }
    }
    out.push(r0);
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Word {
    Invalid,
    Number,
    Upper,
    Alphabet,
    Connector,
    Punct,
    Other,
}

fn next_word(s: &str) -> (Word, &str, &str) {
    if s.is_empty() {
        return (Word::Invalid, "", "");
    }
    let chars: Vec<(usize, char)> = s.char_indices().collect();
    let end_of = |k: usize| chars.get(k).map_or(s.len(), |c| c.0);
    let first = chars[0].1;
    let mut k = 1usize;
    let wt;
    if is_connector(first) {
        wt = Word::Connector;
        while k < chars.len() && is_connector(chars[k].1) {
            k += 1;
        }
    } else if u::is_punct(first) {
        wt = Word::Punct;
        while k < chars.len() && u::is_punct(chars[k].1) {
            k += 1;
        }
    } else if u::is_upper(first) {
        wt = Word::Upper;
        if k < chars.len() {
            let r = chars[k].1;
            if u::is_upper(r) {
                k += 1;
                while k < chars.len() && u::is_upper(chars[k].1) {
                    k += 1;
                }
                if k < chars.len() && is_alphabet(chars[k].1) {
                    k -= 1;
                }
            } else if is_alphabet(r) {
                k += 1;
                while k < chars.len() && is_alphabet(chars[k].1) && !u::is_upper(chars[k].1) {
                    k += 1;
                }
            }
        }
    } else if is_alphabet(first) {
        wt = Word::Alphabet;
        while k < chars.len() && is_alphabet(chars[k].1) && !u::is_upper(chars[k].1) {
            k += 1;
        }
    } else if u::is_number(first) {
        wt = Word::Number;
        while k < chars.len() && u::is_number(chars[k].1) {
            k += 1;
        }
    } else {
        wt = Word::Other;
        while k < chars.len() {
            let r = chars[k].1;
            if is_connector(r) || is_alphabet(r) || u::is_number(r) || u::is_punct(r) {
                break;
            }
            k += 1;
        }
    }
    let end = end_of(k);
    (wt, &s[..end], &s[end..])
}

fn to_lower_word(out: &mut String, wt: Word, word: &str, connector: char) {
    if wt != Word::Upper && wt != Word::Connector {
        out.push_str(word);
        return;
    }
    for c in word.chars() {
        if is_connector(c) {
            out.push(connector);
        } else if u::is_upper(c) {
            out.push(u::to_lower(c));
        } else {
            out.push(c);
        }
    }
}

fn camel_to_lower(s: &str, connector: char) -> String {
    if s.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let (mut wt, mut word, mut remaining) = next_word(s);
    while !remaining.is_empty() {
        if wt != Word::Connector {
            to_lower_word(&mut out, wt, word, connector);
        }
        let prev = wt;
        let last = word;
        (wt, word, remaining) = next_word(remaining);
        match prev {
            Word::Number => {
                while wt == Word::Alphabet || wt == Word::Number {
                    to_lower_word(&mut out, wt, word, connector);
                    (wt, word, remaining) = next_word(remaining);
                }
                if wt != Word::Invalid && wt != Word::Punct && wt != Word::Connector {
                    out.push(connector);
                }
            }
            Word::Connector => to_lower_word(&mut out, prev, last, connector),
            Word::Punct => {}
            _ => {
                if wt != Word::Number {
                    if wt != Word::Connector && wt != Word::Punct {
                        out.push(connector);
                    }
                    continue;
                }
                if remaining.is_empty() {
                    continue;
                }
                let last = word;
                (wt, word, remaining) = next_word(remaining);
                if wt != Word::Alphabet {
                    to_lower_word(&mut out, Word::Number, last, connector);
                    if wt != Word::Connector && wt != Word::Punct {
                        out.push(connector);
                    }
                    continue;
                }
                out.push(connector);
                to_lower_word(&mut out, Word::Number, last, connector);
                while wt == Word::Alphabet || wt == Word::Number {
                    to_lower_word(&mut out, wt, word, connector);
                    (wt, word, remaining) = next_word(remaining);
                }
                if wt != Word::Invalid && wt != Word::Connector && wt != Word::Punct {
                    out.push(connector);
                }
            }
        }
    }
    to_lower_word(&mut out, wt, word, connector);
    out
}

// --- Go regexp on the regex crate -----------------------------------------------------------------

/// Compile a Go (RE2) pattern. Go's `\d \s \w \b` are ASCII-only, the regex crate's are Unicode, so
/// those escapes are rewritten to ASCII classes first.
fn go_regex(pattern: &str) -> Result<regex::Regex, String> {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut in_class = false;
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let Some(n) = chars.next() else {
                out.push('\\');
                break;
            };
            let repl = match (n, in_class) {
                ('d', false) => Some("[0-9]"),
                ('D', false) => Some("[^0-9]"),
                ('s', false) => Some("[\\t\\n\\f\\r ]"),
                ('S', false) => Some("[^\\t\\n\\f\\r ]"),
                ('w', false) => Some("[0-9A-Za-z_]"),
                ('W', false) => Some("[^0-9A-Za-z_]"),
                ('d', true) => Some("0-9"),
                ('s', true) => Some("\\t\\n\\f\\r "),
                ('w', true) => Some("0-9A-Za-z_"),
                ('b', false) => Some("(?-u:\\b)"),
                ('B', false) => Some("(?-u:\\B)"),
                _ => None,
            };
            match repl {
                Some(r) => out.push_str(r),
                None => {
                    out.push('\\');
                    out.push(n);
                }
            }
            continue;
        }
        if c == '[' && !in_class {
            in_class = true;
            out.push(c);
            if chars.peek() == Some(&'^') {
                out.push('^');
                chars.next();
            }
            if chars.peek() == Some(&']') {
                out.push_str("\\]");
                chars.next();
            }
            continue;
        }
        if c == '[' && in_class && chars.peek() == Some(&':') {
            // POSIX class [:alpha:]
            out.push(c);
            for d in chars.by_ref() {
                out.push(d);
                if d == ']' {
                    break;
                }
            }
            continue;
        }
        if c == ']' && in_class {
            in_class = false;
        }
        out.push(c);
    }
    regex::Regex::new(&out).map_err(|e| go_regex_error(pattern, &e.to_string()))
}

/// Go's wording for the common pattern errors (`error parsing regexp: CODE: `ARG``).
fn go_regex_error(pattern: &str, err: &str) -> String {
    let bq = |s: &str| {
        if gofmt::can_backquote(s) {
            format!("`{s}`")
        } else {
            gofmt::quote(s)
        }
    };
    let (code, arg) = if err.contains("unclosed group") {
        ("missing closing )", pattern.to_owned())
    } else if err.contains("unopened group") {
        ("unexpected )", pattern.to_owned())
    } else if err.contains("unclosed character class") {
        (
            "missing closing ]",
            pattern
                .rfind('[')
                .map_or(pattern, |i| &pattern[i..])
                .to_owned(),
        )
    } else if err.contains("repetition operator missing expression") {
        let op = pattern
            .chars()
            .find(|c| matches!(c, '*' | '+' | '?'))
            .unwrap_or('*');
        ("missing argument to repetition operator", op.to_string())
    } else if err.contains("escape sequence") {
        let arg = pattern
            .find('\\')
            .map_or(String::new(), |i| pattern[i..].chars().take(2).collect());
        ("invalid escape sequence", arg)
    } else {
        let last = err
            .lines()
            .last()
            .unwrap_or_default()
            .trim()
            .trim_start_matches("error: ");
        return format!("error parsing regexp: {last}: {}", bq(pattern));
    };
    format!("error parsing regexp: {code}: {}", bq(&arg))
}

fn must_compile(pattern: &str) -> Result<regex::Regex, CallError> {
    go_regex(pattern).map_err(|e| {
        let q = if gofmt::can_backquote(pattern) {
            format!("`{pattern}`")
        } else {
            gofmt::quote(pattern)
        };
        CallError::Msg(format!("regexp: Compile({q}): {e}"))
    })
}

/// Go's `FindAll` matches: an empty match right after the previous match is skipped.
fn go_matches<'s>(re: &'s regex::Regex, s: &'s str) -> impl Iterator<Item = regex::Match<'s>> {
    let mut prev_end: Option<usize> = None;
    re.find_iter(s).filter(move |m| {
        let skip = m.start() == m.end() && prev_end == Some(m.start());
        if !skip {
            prev_end = Some(m.end());
        }
        !skip
    })
}

/// `FindAllString(s, n)`: at most `n` matches (all when `n` < 0).
fn find_all<'s>(re: &'s regex::Regex, s: &'s str, n: i64) -> impl Iterator<Item = &'s str> {
    let limit = if n < 0 {
        usize::MAX
    } else {
        usize::try_from(n).unwrap_or(usize::MAX)
    };
    go_matches(re, s).map(|m| m.as_str()).take(limit)
}

/// `Regexp.Split(s, n)`: the parts, one by one.
fn regex_split<'s>(
    re: &'s regex::Regex,
    s: &'s str,
    n: i64,
) -> Box<dyn Iterator<Item = &'s str> + 's> {
    if n == 0 {
        return Box::new(std::iter::empty());
    }
    if !re.as_str().is_empty() && s.is_empty() {
        return Box::new(std::iter::once(""));
    }
    let mut matches = go_matches(re, s);
    let (mut beg, mut end, mut pushed, mut done) = (0usize, 0usize, 0i64, false);
    Box::new(std::iter::from_fn(move || {
        while !done {
            if !(n > 0 && pushed == n - 1)
                && let Some(m) = matches.next()
            {
                end = m.start();
                let part = &s[beg..end];
                beg = m.end();
                if m.end() != 0 {
                    pushed += 1;
                    return Some(part);
                }
                continue;
            }
            done = true;
            if end != s.len() {
                return Some(&s[beg..]);
            }
        }
        None
    }))
}

// --- paths ---------------------------------------------------------------------------------------

fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".to_owned();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let body = parts.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".to_owned(),
        (false, false) => body,
    }
}

fn path_base(p: &str) -> String {
    if p.is_empty() {
        return ".".to_owned();
    }
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return "/".to_owned();
    }
    t.rsplit('/').next().unwrap_or(t).to_owned()
}

fn path_dir(p: &str) -> String {
    let i = p.rfind('/').map_or(0, |i| i + 1);
    path_clean(&p[..i])
}

fn path_ext(p: &str) -> String {
    for (i, c) in p.char_indices().rev() {
        if c == '/' {
            break;
        }
        if c == '.' {
            return p[i..].to_owned();
        }
    }
    String::new()
}

// --- encodings -----------------------------------------------------------------------------------

fn b32enc(s: &str) -> String {
    const ALPHA: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let b = s.as_bytes();
    let mut out = String::new();
    for chunk in b.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let v = buf.iter().fold(0u64, |acc, x| (acc << 8) | u64::from(*x));
        let chars = match chunk.len() {
            1 => 2,
            2 => 4,
            3 => 5,
            4 => 7,
            _ => 8,
        };
        for k in 0..8 {
            if k < chars {
                out.push(ALPHA[((v >> (35 - 5 * k)) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn b32dec(s: &str) -> String {
    const ALPHA: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let clean: Vec<u8> = s.bytes().filter(|c| *c != b'\n' && *c != b'\r').collect();
    if !clean.len().is_multiple_of(8) {
        return format!("illegal base32 data at input byte {}", clean.len() / 8 * 8);
    }
    let mut out = Vec::new();
    for (ci, chunk) in clean.chunks(8).enumerate() {
        let mut v = 0u64;
        let mut n = 0;
        for (k, c) in chunk.iter().enumerate() {
            if *c == b'=' {
                break;
            }
            match ALPHA.find(*c as char) {
                Some(d) => {
                    v |= (d as u64) << (35 - 5 * k);
                    n += 1;
                }
                None => return format!("illegal base32 data at input byte {}", ci * 8 + k),
            }
        }
        let bytes = match n {
            8 => 5,
            7 => 4,
            5 => 3,
            4 => 2,
            2 => 1,
            0 => 0,
            _ => return format!("illegal base32 data at input byte {}", ci * 8 + n),
        };
        for k in 0..bytes {
            out.push(((v >> (32 - 8 * k)) & 0xFF) as u8);
        }
    }
    bytes_lossy(&out)
}

fn b64dec(s: &str) -> String {
    use base64::Engine as _;
    let clean: String = s.chars().filter(|c| *c != '\n' && *c != '\r').collect();
    match base64::engine::general_purpose::STANDARD.decode(clean.as_bytes()) {
        Ok(b) => bytes_lossy(&b),
        Err(
            base64::DecodeError::InvalidByte(o, _) | base64::DecodeError::InvalidLastSymbol(o, _),
        ) => {
            format!("illegal base64 data at input byte {o}")
        }
        Err(_) => format!("illegal base64 data at input byte {}", clean.len() / 4 * 4),
    }
}

fn adler32(s: &str) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &c in s.as_bytes() {
        a = (a + u32::from(c)) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Sprig's `deepCopy`: every list and map copied, each asked for before it is made (a value that
/// shares its parts copies them once per path, which can be exponentially many).
fn deep_copy(c: &mut CallCtx, v: &Value, depth: usize) -> Res {
    if depth > 100 {
        return Err(CallError::Limit(
            "value nested deeper than this engine's limit of 100 levels".to_owned(),
        ));
    }
    Ok(match v {
        Value::Slice(s) => {
            c.reserve_elements(s.items.len())?;
            let mut items = Vec::with_capacity(s.items.len());
            for x in &s.items {
                items.push(deep_copy(c, x, depth + 1)?);
            }
            Value::slice(s.ty.clone(), items)
        }
        Value::Map(m) => {
            let from = m.entries.borrow();
            c.reserve_elements(from.len().saturating_mul(2))?;
            let mut entries = Vec::with_capacity(from.len());
            for (k, x) in from.iter() {
                entries.push((k.clone(), deep_copy(c, x, depth + 1)?));
            }
            Value::map(m.ty.clone(), entries)
        }
        v => v.clone(),
    })
}

fn dict_get(d: &Value, key: &str) -> Option<Value> {
    d.map_get(&Value::str(key))
}

fn dict_set(c: &mut CallCtx, d: &Value, key: &str, value: Value) -> Result<(), CallError> {
    let Value::Map(m) = d else {
        return msg("assignment to entry in nil map");
    };
    let mut entries = m.entries.borrow_mut();
    let k = Value::str(key);
    match entries.binary_search_by(|(e, _)| crate::value::compare_keys(e, &k)) {
        Ok(i) => entries[i].1 = value,
        Err(i) => {
            // A new entry (and its key): charged, and the entries it moves count as work.
            c.reserve_parts(0, 2, 1, key.len())?;
            c.cost = c.cost.saturating_add((entries.len() - i) as u64);
            entries.insert(i, (k, value));
        }
    }
    Ok(())
}

fn unsupported(_: &mut CallCtx, _: Vec<Value>) -> Res {
    Err(CallError::Unsupported)
}

/// Sprig's `untilStep`: the count is computed first (Go would loop past an overflow; here the
/// list ends there).
fn until_step(c: &mut CallCtx, start: i64, stop: i64, step: i64) -> Res {
    let n = if stop < start && step < 0 {
        start.abs_diff(stop).div_ceil(step.unsigned_abs())
    } else if stop > start && step > 0 {
        stop.abs_diff(start).div_ceil(step.unsigned_abs())
    } else {
        0
    };
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    c.reserve_elements(n)?;
    let mut v = Vec::with_capacity(n);
    let mut i = start;
    for _ in 0..n {
        v.push(Value::int(i));
        i = i.wrapping_add(step);
    }
    Ok(Value::slice(Type::slice_of(Type::Int), v))
}

fn seq(c: &mut CallCtx, p: &[i64]) -> Res {
    // Go's int arithmetic wraps.
    let list = match *p {
        [] => return Ok(Value::str("")),
        [end] => {
            let inc = if end < 1 { -1 } else { 1 };
            until_step(c, 1, end.wrapping_add(inc), inc)?
        }
        [start, end] => {
            let step = if end < start { -1 } else { 1 };
            until_step(c, start, end.wrapping_add(step), step)?
        }
        [start, step, end] => {
            let mut inc = 1;
            if end < start {
                inc = -1;
                if step > 0 {
                    return Ok(Value::str(""));
                }
            }
            until_step(c, start, end.wrapping_add(inc), step)?
        }
        _ => return Ok(Value::str("")),
    };
    let mut out = Capped::new(c.room());
    for (i, x) in list.slice_items().unwrap_or(&[]).iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&to_int64(x).to_string());
    }
    c.take(out)
}

/// The `toJson` family within the room left; Go's encoding errors are [`CallError::Msg`].
fn json_fn(c: &mut CallCtx, v: &Value, indent: Option<&str>, html: bool) -> Res {
    let room = c.room();
    match crate::json::encode(v, indent, html, room) {
        Ok(text) => {
            c.reserve_bytes(text.len())?;
            Ok(Value::string(text))
        }
        Err(crate::json::EncodeError::Json(e)) => msg(e),
        Err(crate::json::EncodeError::TooLong) => Err(c.too_long(room)),
    }
}

/// Registers every hermetic Sprig function, family by family.
pub fn register(f: &mut HashMap<&'static str, FuncDef>) {
    f.insert("hello", def(vec![], false, |_, _| Ok(Value::str("Hello!"))));
    strings::register(f);
    numbers::register(f);
    collections::register(f);
    regexp::register(f);
}
