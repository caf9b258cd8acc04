//! Function signatures and Go's builtin functions (`and`, `len`, `index`, `printf`, `eq`...).
//!
//! Go calls template functions by reflection: each argument is checked against the parameter's Go
//! type before the call (`wrong type for value; expected string; got int`), literals are converted by
//! the parameter's kind, and a function may fail with an error (`error calling index: ...`). A
//! [`FuncDef`] carries exactly that: parameter types and an implementation over checked [`Value`]s.

use std::collections::HashMap;
use std::rc::Rc;

use crate::gofmt;
use crate::value::{Kind, Type, Value};

/// The Go type of a parameter.
#[derive(Clone, Debug)]
pub enum Param {
    /// `reflect.Value`: Go's builtins take any value, including no value.
    Reflect,
    /// A Go type.
    T(Type),
}

/// What a function call may use besides its arguments: the limits, and a work counter.
pub struct CallCtx {
    /// Largest string or list a function may build.
    pub max_value_len: usize,
    /// Work done by functions, in elements or bytes touched.
    pub cost: u64,
}

impl CallCtx {
    /// Refuse a result larger than the limit.
    pub fn check_len(&mut self, n: usize) -> Result<(), CallError> {
        self.cost = self.cost.saturating_add(n as u64);
        if n > self.max_value_len {
            return Err(CallError::Limit(format!(
                "result of {n} bytes or elements exceeds this engine's limit of {}",
                self.max_value_len
            )));
        }
        Ok(())
    }
}

/// How a function call failed.
#[derive(Debug)]
pub enum CallError {
    /// The function's own error (Go: `error calling NAME: MSG`).
    Msg(String),
    /// A resource limit of this engine.
    Limit(String),
    /// A Sprig function this engine does not implement.
    Unsupported,
}

impl From<String> for CallError {
    fn from(s: String) -> CallError {
        CallError::Msg(s)
    }
}

/// A function implementation over type-checked arguments.
pub type Impl = fn(&mut CallCtx, Vec<Value>) -> Result<Value, CallError>;

/// A template function.
#[derive(Clone)]
pub struct FuncDef {
    /// Parameter types; with `variadic`, the last one is the element type of the `...` parameter.
    pub params: Vec<Param>,
    /// Whether the last parameter is variadic.
    pub variadic: bool,
    /// The implementation.
    pub imp: Impl,
}

/// All functions by name: Go's builtins overlaid by Sprig's hermetic map (Sprig's `slice` wins, as in
/// Go where a `FuncMap` entry shadows a builtin).
pub struct Registry {
    /// Functions by name.
    pub funcs: HashMap<&'static str, FuncDef>,
    /// Whether Sprig's hermetic names are known (they parse even where not implemented).
    sprig: bool,
}

pub(crate) fn t(ty: Type) -> Param {
    Param::T(ty)
}

pub(crate) fn def(params: Vec<Param>, variadic: bool, imp: Impl) -> FuncDef {
    FuncDef {
        params,
        variadic,
        imp,
    }
}

impl Registry {
    /// Build the registry: Go's builtins and Sprig's hermetic functions.
    pub fn new() -> Registry {
        Registry::build(true)
    }

    /// Go's builtins alone, as a `text/template` without a `FuncMap` has them (Argo CD Image
    /// Updater's commit and branch templates).
    pub fn go_builtins() -> Registry {
        Registry::build(false)
    }

    fn build(sprig: bool) -> Registry {
        let mut funcs: HashMap<&'static str, FuncDef> = HashMap::new();
        let r = || Param::Reflect;
        let any = || t(Type::Any);
        funcs.insert("and", def(vec![r(), r()], true, |_, _| Ok(Value::Invalid)));
        funcs.insert("or", def(vec![r(), r()], true, |_, _| Ok(Value::Invalid)));
        funcs.insert(
            "not",
            def(vec![r()], false, |_, a| Ok(Value::Bool(!a[0].truth()))),
        );
        funcs.insert("len", def(vec![r()], false, builtin_len));
        funcs.insert("index", def(vec![r(), r()], true, builtin_index));
        funcs.insert("slice", def(vec![r(), r()], true, builtin_slice));
        funcs.insert("call", def(vec![r(), r()], true, builtin_call));
        funcs.insert(
            "print",
            def(vec![any()], true, |c, a| str_result(c, gofmt::sprint(&a))),
        );
        funcs.insert(
            "println",
            def(vec![any()], true, |c, a| str_result(c, gofmt::sprintln(&a))),
        );
        funcs.insert(
            "printf",
            def(vec![t(Type::String), any()], true, builtin_printf),
        );
        funcs.insert(
            "html",
            def(vec![any()], true, |c, a| {
                str_result(c, html_escape(&eval_args(&a)))
            }),
        );
        funcs.insert(
            "js",
            def(vec![any()], true, |c, a| {
                str_result(c, js_escape(&eval_args(&a)))
            }),
        );
        funcs.insert(
            "urlquery",
            def(vec![any()], true, |c, a| {
                str_result(c, query_escape(&eval_args(&a)))
            }),
        );
        funcs.insert("eq", def(vec![r(), r()], true, builtin_eq));
        funcs.insert(
            "ne",
            def(vec![r(), r()], false, |_, a| {
                Ok(Value::Bool(!eq(&a[0], &a[1..])?))
            }),
        );
        funcs.insert(
            "lt",
            def(vec![r(), r()], false, |_, a| {
                Ok(Value::Bool(lt(&a[0], &a[1])?))
            }),
        );
        funcs.insert(
            "le",
            def(vec![r(), r()], false, |_, a| {
                Ok(Value::Bool(le(&a[0], &a[1])?))
            }),
        );
        funcs.insert(
            "gt",
            def(vec![r(), r()], false, |_, a| {
                Ok(Value::Bool(!le(&a[0], &a[1])?))
            }),
        );
        funcs.insert(
            "ge",
            def(vec![r(), r()], false, |_, a| {
                Ok(Value::Bool(!lt(&a[0], &a[1])?))
            }),
        );
        if sprig {
            crate::sprig::register(&mut funcs);
        }
        Registry { funcs, sprig }
    }

    /// Whether `name` is a function a template may name (Go's parse-time check).
    pub fn has(&self, name: &str) -> bool {
        self.funcs.contains_key(name)
            || (self.sprig && crate::sprig::HERMETIC_NAMES.contains(&name))
    }
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

pub(crate) fn str_result(c: &mut CallCtx, s: String) -> Result<Value, CallError> {
    c.check_len(s.len())?;
    Ok(Value::Str(Rc::from(s)))
}

/// Go's `evalArgs` for `html`, `js` and `urlquery`: one string argument as is, anything else printed.
fn eval_args(args: &[Value]) -> String {
    if let [Value::Str(s)] = args {
        return s.to_string();
    }
    gofmt::sprint(args)
}

fn builtin_printf(c: &mut CallCtx, a: Vec<Value>) -> Result<Value, CallError> {
    let format = a[0].as_str().unwrap_or_default().to_owned();
    str_result(c, gofmt::sprintf(&format, &a[1..]))
}

fn builtin_len(_: &mut CallCtx, a: Vec<Value>) -> Result<Value, CallError> {
    match &a[0] {
        Value::Nil(t) if t.kind() == Kind::Interface => Err("len of nil pointer".to_owned().into()),
        v => match v.go_len() {
            Some(n) => Ok(Value::int(n as i64)),
            None => Err(format!("len of type {}", v.type_name()).into()),
        },
    }
}

fn index_arg(index: &Value, cap: usize) -> Result<usize, String> {
    let x = match index {
        Value::Int(i, _) => *i,
        Value::Invalid => return Err("cannot index slice/array with nil".to_owned()),
        v => {
            return Err(format!(
                "cannot index slice/array with type {}",
                v.type_name()
            ));
        }
    };
    if x < 0 || x as u64 > cap as u64 {
        return Err(format!("index out of range: {x}"));
    }
    Ok(x as usize)
}

/// Go's `prepareArg` for map keys.
fn prepare_arg(value: &Value, ty: &Type) -> Result<Value, String> {
    let value = match value {
        Value::Invalid => {
            if !ty.can_be_nil() {
                return Err(format!("value is nil; should be of type {ty}"));
            }
            ty.zero()
        }
        v => v.clone(),
    };
    let vt = value.ty().unwrap_or(Type::Any);
    if vt.assignable_to(ty) {
        return Ok(value);
    }
    let int_like = |k: Kind| matches!(k, Kind::Int | Kind::Int64 | Kind::Int32 | Kind::Uint8);
    if int_like(vt.kind())
        && int_like(ty.kind())
        && let Value::Int(i, _) = value
    {
        return Ok(Value::Int(i, ty.clone()));
    }
    Err(format!("value has type {vt}; should be {ty}"))
}

fn builtin_index(_: &mut CallCtx, a: Vec<Value>) -> Result<Value, CallError> {
    let mut item = a[0].clone().unwrap_nil_interface();
    if matches!(item, Value::Invalid) {
        return Err("index of untyped nil".to_owned().into());
    }
    for index in &a[1..] {
        let index = index.clone().unwrap_nil_interface();
        if matches!(item, Value::Nil(Type::Any)) {
            return Err("index of nil pointer".to_owned().into());
        }
        item = match &item {
            Value::Str(s) => {
                let x = index_arg(&index, s.len())?;
                match s.as_bytes().get(x) {
                    Some(b) => Value::Int(i64::from(*b), Type::Uint8),
                    None => return Err("reflect: string index out of range".to_string().into()),
                }
            }
            Value::Slice(_) | Value::Nil(Type::Slice(_)) => {
                let items = item.slice_items().unwrap_or(&[]);
                let x = index_arg(&index, items.len())?;
                match items.get(x) {
                    Some(v) => v.clone(),
                    None => return Err("reflect: slice index out of range".to_owned().into()),
                }
            }
            Value::Map(_) | Value::Nil(_) if item.kind() == Kind::Map => {
                let ty = item.ty().unwrap_or(Type::Any);
                let Some((kt, et)) = ty.map_types() else {
                    return Err("can't index".to_owned().into());
                };
                let key = prepare_arg(&index, kt)?;
                match item.map_get(&key) {
                    Some(v) => v,
                    None => et.zero(),
                }
            }
            v => return Err(format!("can't index item of type {}", v.type_name()).into()),
        };
    }
    Ok(item)
}

fn builtin_slice(_: &mut CallCtx, a: Vec<Value>) -> Result<Value, CallError> {
    // Go's builtin; Sprig's `slice` replaces it in Flux's function map, this one stays for completeness.
    let item = a[0].clone().unwrap_nil_interface();
    if matches!(item, Value::Invalid) {
        return Err("slice of untyped nil".to_owned().into());
    }
    Err(format!("can't slice item of type {}", item.type_name()).into())
}

fn builtin_call(_: &mut CallCtx, a: Vec<Value>) -> Result<Value, CallError> {
    match a[0].clone().unwrap_nil_interface() {
        Value::Invalid => Err("call of nil".to_owned().into()),
        v => Err(format!("non-function of type {}", v.type_name()).into()),
    }
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum BasicKind {
    Invalid,
    Bool,
    Complex,
    Int,
    Float,
    String,
    Uint,
}

fn basic_kind(v: &Value) -> BasicKind {
    match v {
        Value::Bool(_) => BasicKind::Bool,
        Value::Int(_, Type::Uint8) => BasicKind::Uint,
        Value::Int(..) => BasicKind::Int,
        Value::Float(_) => BasicKind::Float,
        Value::Complex(..) => BasicKind::Complex,
        Value::Str(_) => BasicKind::String,
        _ => BasicKind::Invalid,
    }
}

fn int_of(v: &Value) -> i64 {
    match v {
        Value::Int(i, _) => *i,
        _ => 0,
    }
}

fn builtin_eq(_: &mut CallCtx, a: Vec<Value>) -> Result<Value, CallError> {
    Ok(Value::Bool(eq(&a[0], &a[1..])?))
}

/// Go's `eq`: true if `arg1` equals any of `rest`.
pub fn eq(arg1: &Value, rest: &[Value]) -> Result<bool, String> {
    let arg1 = arg1.clone().unwrap_nil_interface();
    if rest.is_empty() {
        return Err("missing argument for comparison".to_owned());
    }
    let k1 = basic_kind(&arg1);
    for arg in rest {
        let arg = arg.clone().unwrap_nil_interface();
        let k2 = basic_kind(&arg);
        let truth = if k1 != k2 {
            match (k1, k2) {
                (BasicKind::Int, BasicKind::Uint) | (BasicKind::Uint, BasicKind::Int) => {
                    int_of(&arg1) == int_of(&arg)
                }
                _ => {
                    if !matches!(arg1, Value::Invalid) && !matches!(arg, Value::Invalid) {
                        return Err("incompatible types for comparison".to_owned());
                    }
                    false
                }
            }
        } else {
            match (&arg1, &arg) {
                (Value::Bool(x), Value::Bool(y)) => x == y,
                (Value::Complex(a, b), Value::Complex(c, d)) => a == c && b == d,
                (Value::Float(x), Value::Float(y)) => x == y,
                (Value::Int(x, _), Value::Int(y, _)) => x == y,
                (Value::Str(x), Value::Str(y)) => x == y,
                _ => {
                    let same_kind = arg1.kind() == arg.kind()
                        || matches!(arg1, Value::Invalid)
                        || matches!(arg, Value::Invalid);
                    if !same_kind {
                        return Err(format!(
                            "non-comparable types {}: {}, {}: {}",
                            gofmt::sprintf("%s", std::slice::from_ref(&arg1)),
                            arg1.type_name(),
                            arg.type_name(),
                            gofmt::sprint_value(&arg)
                        ));
                    }
                    if arg1.is_nil() || arg.is_nil() {
                        arg1.is_nil() == arg.is_nil()
                    } else {
                        if matches!(arg.kind(), Kind::Slice | Kind::Map) {
                            return Err(format!(
                                "non-comparable type {}: {}",
                                gofmt::sprintf("%s", std::slice::from_ref(&arg)),
                                arg.type_name()
                            ));
                        }
                        match (&arg1, &arg) {
                            (Value::Struct(_), Value::Struct(_)) => {
                                arg1.ty()
                                    .is_some_and(|t| arg.ty().is_some_and(|u| t.same(&u)))
                                    && arg1.deep_equal(&arg)
                            }
                            _ => false,
                        }
                    }
                }
            }
        };
        if truth {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Go's `lt`.
pub fn lt(arg1: &Value, arg2: &Value) -> Result<bool, String> {
    let arg1 = arg1.clone().unwrap_nil_interface();
    let arg2 = arg2.clone().unwrap_nil_interface();
    let k1 = basic_kind(&arg1);
    if k1 == BasicKind::Invalid {
        return Err("invalid type for comparison".to_owned());
    }
    let k2 = basic_kind(&arg2);
    if k2 == BasicKind::Invalid {
        return Err("invalid type for comparison".to_owned());
    }
    if k1 != k2 {
        return match (k1, k2) {
            (BasicKind::Int, BasicKind::Uint) | (BasicKind::Uint, BasicKind::Int) => {
                Ok(int_of(&arg1) < int_of(&arg2))
            }
            _ => Err("incompatible types for comparison".to_owned()),
        };
    }
    Ok(match (&arg1, &arg2) {
        (Value::Float(x), Value::Float(y)) => x < y,
        (Value::Int(x, _), Value::Int(y, _)) => x < y,
        (Value::Str(x), Value::Str(y)) => x.as_bytes() < y.as_bytes(),
        _ => return Err("invalid type for comparison".to_owned()),
    })
}

/// Go's `le`.
pub fn le(arg1: &Value, arg2: &Value) -> Result<bool, String> {
    if lt(arg1, arg2)? {
        return Ok(true);
    }
    eq(arg1, std::slice::from_ref(arg2))
}

/// `template.HTMLEscapeString`.
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\0' => out.push('\u{FFFD}'),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// `template.JSEscapeString`.
pub fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u00{:02X}", c as u32)),
            c if (c as u32) < 0x80 => out.push(c),
            c if crate::unicode::is_print(c) => out.push(c),
            c => out.push_str(&format!("\\u{:04X}", c as u32)),
        }
    }
    out
}

/// `url.QueryEscape`.
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}
