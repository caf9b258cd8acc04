//! Sprig's hermetic functions (`sprig.HermeticTxtFuncMap`, Sprig 3.2), as Flux gives them to commit
//! message templates.
//!
//! Every name of the hermetic map parses (Go checks names at parse time); the functions below are
//! implemented with Sprig's semantics, including its quirks (byte-wise `trunc`, `nospace` and
//! `initials`, `default` by emptiness, panics that Go reports as `error calling NAME: ...`). The rest
//! fail when executed with [`crate::ExecErrorKind::Unsupported`]: crypto key and certificate
//! generation, random functions, dates, `semver`, `urlParse`, `merge` and decimal float arithmetic.

use std::collections::HashMap;

use crate::funcs::{CallCtx, CallError, FuncDef, Param, def, str_result, t};
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

/// Sprig's `strval`.
pub fn strval(v: &Value) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        v => gofmt::sprint_value(v),
    }
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

/// Sprig's `strslice` (`toStrings`, `join`, `sortAlpha`).
fn strslice(v: &Value) -> Vec<String> {
    match v {
        Value::Slice(s) => s.items.iter().filter(|x| !is_nil(x)).map(strval).collect(),
        Value::Nil(t) if t.kind() == Kind::Slice => Vec::new(),
        v if is_nil(v) => Vec::new(),
        v => vec![strval(v)],
    }
}

fn slice_of(v: &Value, what: &str) -> Result<Vec<Value>, CallError> {
    match v {
        Value::Slice(s) => Ok(s.items.clone()),
        Value::Nil(t) if t.kind() == Kind::Slice => Ok(Vec::new()),
        v if is_nil(v) => msg(NIL_DEREF),
        v => msg(format!("Cannot {what} on type {}", v.kind().name())),
    }
}

fn list_result(c: &mut CallCtx, items: Vec<Value>) -> Res {
    c.check_len(items.len())?;
    Ok(Value::list(items))
}

fn strings_result(c: &mut CallCtx, items: Vec<String>) -> Res {
    c.check_len(items.iter().map(String::len).sum::<usize>() + items.len())?;
    Ok(Value::strings(items))
}

fn map_ss(c: &mut CallCtx, parts: Vec<&str>) -> Res {
    c.check_len(parts.len())?;
    let entries = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| (Value::string(format!("_{i}")), Value::str(p)))
        .collect();
    Ok(Value::map(
        Type::map_of(Type::String, Type::String),
        entries,
    ))
}

/// `strings.Split`.
fn go_split<'s>(s: &'s str, sep: &str, n: i64) -> Vec<&'s str> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let mut out: Vec<&str> = Vec::new();
        let mut idx: Vec<usize> = s.char_indices().map(|(i, _)| i).collect();
        idx.push(s.len());
        let count = idx.len() - 1;
        let limit = if n < 0 || n as usize > count {
            count
        } else {
            n as usize
        };
        for k in 0..limit {
            let end = if k == limit - 1 { s.len() } else { idx[k + 1] };
            out.push(&s[idx[k]..end]);
        }
        return out;
    }
    if n < 0 {
        return s.split(sep).collect();
    }
    s.splitn(n as usize, sep).collect()
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

fn substr(start: i64, end: i64, s: &str) -> Result<String, CallError> {
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
        return Ok(bytes_lossy(&b[..e]));
    }
    let st = start as usize;
    if end < 0 || end as usize > len {
        if st > len {
            return Err(runtime_slice_err(st, None, len, true));
        }
        return Ok(bytes_lossy(&b[st..]));
    }
    let e = end as usize;
    if st > e {
        return Err(runtime_slice_err(st, Some(e), len, false));
    }
    Ok(bytes_lossy(&b[st..e]))
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

fn wrap_custom(s: &str, wrap_length: i64, new_line: &str, wrap_long: bool) -> String {
    if s.is_empty() {
        return String::new();
    }
    let new_line = if new_line.is_empty() { "\n" } else { new_line };
    let wl = wrap_length.max(1) as usize;
    let b = s.as_bytes();
    let len = b.len();
    let mut offset = 0usize;
    let mut out: Vec<u8> = Vec::new();
    while len - offset > wl {
        if b[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = (wl + offset + 1).min(len);
        let space = b[offset..end].iter().rposition(|c| *c == b' ');
        if let Some(sp) = space {
            let at = sp + offset;
            out.extend_from_slice(&b[offset..at]);
            out.extend_from_slice(new_line.as_bytes());
            offset = at + 1;
        } else if wrap_long {
            let end = wl + offset;
            out.extend_from_slice(&b[offset..end]);
            out.extend_from_slice(new_line.as_bytes());
            offset += wl;
        } else {
            let end = wl + offset;
            match b[end..].iter().position(|c| *c == b' ') {
                None => {
                    out.extend_from_slice(&b[offset..]);
                    offset = len;
                }
                Some(idx) => {
                    let at = idx + end;
                    out.extend_from_slice(&b[offset..at]);
                    out.extend_from_slice(new_line.as_bytes());
                    offset = at + 1;
                }
            }
        }
    }
    out.extend_from_slice(&b[offset..]);
    bytes_lossy(&out)
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

fn find_all(re: &regex::Regex, s: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut prev_end: Option<usize> = None;
    for m in re.find_iter(s) {
        // Go skips an empty match right after the previous match.
        if m.start() == m.end() && prev_end == Some(m.start()) {
            continue;
        }
        out.push(m.as_str().to_owned());
        prev_end = Some(m.end());
        if n > 0 && out.len() as i64 >= n {
            break;
        }
    }
    out
}

fn regex_split(re: &regex::Regex, s: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if !re.as_str().is_empty() && s.is_empty() {
        return vec![String::new()];
    }
    let mut matches: Vec<(usize, usize)> = Vec::new();
    let mut prev_end: Option<usize> = None;
    for m in re.find_iter(s) {
        if m.start() == m.end() && prev_end == Some(m.start()) {
            continue;
        }
        matches.push((m.start(), m.end()));
        prev_end = Some(m.end());
    }
    let mut out: Vec<String> = Vec::new();
    let (mut beg, mut end) = (0usize, 0usize);
    for (ms, me) in matches {
        if n > 0 && out.len() as i64 == n - 1 {
            break;
        }
        end = ms;
        if me != 0 {
            out.push(s[beg..end].to_owned());
        }
        beg = me;
    }
    if end != s.len() {
        out.push(s[beg..].to_owned());
    }
    out
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

fn deep_copy(v: &Value, depth: usize) -> Result<Value, CallError> {
    if depth > 100 {
        return Err(CallError::Limit(
            "value nested deeper than this engine's limit of 100 levels".to_owned(),
        ));
    }
    Ok(match v {
        Value::Slice(s) => {
            let items: Result<Vec<Value>, CallError> =
                s.items.iter().map(|x| deep_copy(x, depth + 1)).collect();
            Value::slice(s.ty.clone(), items?)
        }
        Value::Map(m) => {
            let mut entries = Vec::new();
            for (k, x) in m.entries.borrow().iter() {
                entries.push((k.clone(), deep_copy(x, depth + 1)?));
            }
            Value::map(m.ty.clone(), entries)
        }
        v => v.clone(),
    })
}

fn dict_get(d: &Value, key: &str) -> Option<Value> {
    d.map_get(&Value::str(key))
}

fn dict_set(d: &Value, key: &str, value: Value) -> Result<(), CallError> {
    let Value::Map(m) = d else {
        return msg("assignment to entry in nil map");
    };
    let mut entries = m.entries.borrow_mut();
    let k = Value::str(key);
    match entries.binary_search_by(|(e, _)| crate::value::compare_keys(e, &k)) {
        Ok(i) => entries[i].1 = value,
        Err(i) => entries.insert(i, (k, value)),
    }
    Ok(())
}

fn unsupported(_: &mut CallCtx, _: Vec<Value>) -> Res {
    Err(CallError::Unsupported)
}

fn until_step(c: &mut CallCtx, start: i64, stop: i64, step: i64) -> Res {
    let mut v = Vec::new();
    if stop < start {
        if step >= 0 {
            return Ok(Value::slice(Type::slice_of(Type::Int), v));
        }
        let n = ((start - stop) as u64).div_ceil(step.unsigned_abs());
        c.check_len(n as usize)?;
        let mut i = start;
        while i > stop {
            v.push(Value::int(i));
            i += step;
        }
        return Ok(Value::slice(Type::slice_of(Type::Int), v));
    }
    if step <= 0 {
        return Ok(Value::slice(Type::slice_of(Type::Int), v));
    }
    let n = ((stop - start) as u64).div_ceil(step as u64);
    c.check_len(n as usize)?;
    let mut i = start;
    while i < stop {
        v.push(Value::int(i));
        i += step;
    }
    Ok(Value::slice(Type::slice_of(Type::Int), v))
}

fn seq(c: &mut CallCtx, p: &[i64]) -> Res {
    let ints = |v: Value| -> Vec<String> {
        v.slice_items()
            .unwrap_or(&[])
            .iter()
            .map(|x| to_int64(x).to_string())
            .collect()
    };
    let s = match p.len() {
        0 => String::new(),
        1 => {
            let (start, end) = (1, p[0]);
            let inc = if end < start { -1 } else { 1 };
            ints(until_step(c, start, end + inc, inc)?).join(" ")
        }
        2 => {
            let (start, end) = (p[0], p[1]);
            let step = if end < start { -1 } else { 1 };
            ints(until_step(c, start, end + step, step)?).join(" ")
        }
        3 => {
            let (start, step, end) = (p[0], p[1], p[2]);
            let mut inc = 1;
            if end < start {
                inc = -1;
                if step > 0 {
                    return Ok(Value::str(""));
                }
            }
            ints(until_step(c, start, end + inc, step)?).join(" ")
        }
        _ => String::new(),
    };
    str_result(c, s)
}

fn json_fn(v: &Value, indent: Option<&str>, html: bool) -> Result<String, String> {
    crate::json::encode(v, indent, html)
}

/// Register Sprig's functions.
pub fn register(f: &mut HashMap<&'static str, FuncDef>) {
    let mut add =
        |name: &'static str, params: Vec<Param>, variadic: bool, imp: crate::funcs::Impl| {
            f.insert(name, def(params, variadic, imp));
        };
    add("hello", vec![], false, |_, _| Ok(Value::str("Hello!")));
    // strings
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
    // conversions and numbers
    add("atoi", vec![s()], false, |_, a| {
        let st = arg_str(&a[0]);
        let digits = st.strip_prefix(['+', '-']).unwrap_or(st);
        let ok = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
        Ok(Value::int(if ok {
            st.parse::<i64>().unwrap_or(0)
        } else {
            0
        }))
    });
    add("int64", vec![a()], false, |_, a| {
        Ok(Value::int64(to_int64(&a[0])))
    });
    add("int", vec![a()], false, |_, a| {
        Ok(Value::int(to_int64(&a[0])))
    });
    add("float64", vec![a()], false, |_, a| {
        Ok(Value::Float(to_float64(&a[0])))
    });
    add("toDecimal", vec![a()], false, |_, a| {
        let text = gofmt::sprint_value(&a[0]);
        let digits = text.strip_prefix(['+', '-']).unwrap_or(&text);
        let v = if !digits.is_empty() && digits.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
            i64::from_str_radix(&text, 8).unwrap_or(0)
        } else {
            0
        };
        Ok(Value::int64(v))
    });
    add("seq", vec![i()], true, |c, a| {
        let p: Vec<i64> = a.iter().map(arg_int).collect();
        seq(c, &p)
    });
    add("split", vec![s(), s()], false, |c, a| {
        let parts = go_split(arg_str(&a[1]), arg_str(&a[0]), -1);
        map_ss(c, parts)
    });
    add("splitList", vec![s(), s()], false, |c, a| {
        let parts: Vec<String> = go_split(arg_str(&a[1]), arg_str(&a[0]), -1)
            .into_iter()
            .map(str::to_owned)
            .collect();
        strings_result(c, parts)
    });
    add("splitn", vec![s(), i(), s()], false, |c, a| {
        let parts = go_split(arg_str(&a[2]), arg_str(&a[0]), arg_int(&a[1]));
        map_ss(c, parts)
    });
    add("toStrings", vec![a()], false, |c, a| {
        strings_result(c, strslice(&a[0]))
    });
    add("until", vec![i()], false, |c, a| {
        let n = arg_int(&a[0]);
        until_step(c, 0, n, if n < 0 { -1 } else { 1 })
    });
    add("untilStep", vec![i(), i(), i()], false, |c, a| {
        until_step(c, arg_int(&a[0]), arg_int(&a[1]), arg_int(&a[2]))
    });
    add("add1", vec![a()], false, |_, a| {
        Ok(Value::int64(to_int64(&a[0]).wrapping_add(1)))
    });
    add("add", vec![a()], true, |_, a| {
        Ok(Value::int64(
            a.iter().fold(0i64, |acc, v| acc.wrapping_add(to_int64(v))),
        ))
    });
    add("sub", vec![a(), a()], false, |_, a| {
        Ok(Value::int64(to_int64(&a[0]).wrapping_sub(to_int64(&a[1]))))
    });
    add("div", vec![a(), a()], false, |_, a| {
        let d = to_int64(&a[1]);
        if d == 0 {
            return msg("runtime error: integer divide by zero");
        }
        Ok(Value::int64(to_int64(&a[0]).wrapping_div(d)))
    });
    add("mod", vec![a(), a()], false, |_, a| {
        let d = to_int64(&a[1]);
        if d == 0 {
            return msg("runtime error: integer divide by zero");
        }
        Ok(Value::int64(to_int64(&a[0]).wrapping_rem(d)))
    });
    add("mul", vec![a(), a()], true, |_, a| {
        Ok(Value::int64(
            a[1..]
                .iter()
                .fold(to_int64(&a[0]), |acc, v| acc.wrapping_mul(to_int64(v))),
        ))
    });
    fn max(_: &mut CallCtx, a: Vec<Value>) -> Res {
        Ok(Value::int64(
            a.iter().map(to_int64).fold(to_int64(&a[0]), i64::max),
        ))
    }
    fn min(_: &mut CallCtx, a: Vec<Value>) -> Res {
        Ok(Value::int64(
            a.iter().map(to_int64).fold(to_int64(&a[0]), i64::min),
        ))
    }
    add("max", vec![a(), a()], true, max);
    add("biggest", vec![a(), a()], true, max);
    add("min", vec![a(), a()], true, min);
    add("maxf", vec![a(), a()], true, |_, a| {
        Ok(Value::Float(a[1..].iter().map(to_float64).fold(
            to_float64(&a[0]),
            |x, y| {
                if x.is_nan() || y.is_nan() {
                    f64::NAN
                } else {
                    x.max(y)
                }
            },
        )))
    });
    add("minf", vec![a(), a()], true, |_, a| {
        Ok(Value::Float(a[1..].iter().map(to_float64).fold(
            to_float64(&a[0]),
            |x, y| {
                if x.is_nan() || y.is_nan() {
                    f64::NAN
                } else {
                    x.min(y)
                }
            },
        )))
    });
    add("floor", vec![a()], false, |_, a| {
        Ok(Value::Float(to_float64(&a[0]).floor()))
    });
    add("ceil", vec![a()], false, |_, a| {
        Ok(Value::Float(to_float64(&a[0]).ceil()))
    });
    add("round", vec![a(), i(), t(Type::Float64)], true, |_, a| {
        let round_on = a
            .get(2)
            .map_or(0.5, |v| if let Value::Float(f) = v { *f } else { 0.5 });
        let val = to_float64(&a[0]);
        let pow = 10f64.powf(arg_int(&a[1]) as f64);
        let digit = pow * val;
        let div = digit.fract();
        let r = if div >= round_on {
            digit.ceil()
        } else {
            digit.floor()
        };
        Ok(Value::Float(r / pow))
    });
    for name in ["add1f", "addf", "subf", "divf", "mulf"] {
        add(name, vec![a()], true, unsupported);
    }
    // lists and dicts
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
    // regular expressions
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
