//! Function signatures and Go's builtin functions (`and`, `len`, `index`, `printf`, `eq`...).
//!
//! Go calls template functions by reflection: each argument is checked against the parameter's Go
//! type before the call (`wrong type for value; expected string; got int`), literals are converted by
//! the parameter's kind, and a function may fail with an error (`error calling index: ...`). A
//! [`FuncDef`] carries exactly that: parameter types and an implementation over checked [`Value`]s.

use std::collections::HashMap;
use std::rc::Rc;

use crate::capped::Capped;
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

/// What a list or map element costs the render budget ([`crate::Limits::max_built`]): the memory
/// of one value slot (a map entry is two).
pub const ELEMENT_BYTES: u64 = std::mem::size_of::<Value>() as u64;

/// What a new list, map, or string made as part of one, costs the budget besides its contents:
/// its reference counts, its slice or map, and the allocator's bookkeeping of its allocations,
/// roughly (a value that is all small parts, a list of lists of two, takes this much per part).
pub const HEADER_BYTES: u64 = 64;

/// What a function call may use besides its arguments: the limits, the render budget, and a work
/// counter.
///
/// Every function that builds a string, list or map asks first: with the exact size when it can
/// tell it cheaply ([`CallCtx::reserve_bytes`], [`CallCtx::reserve_elements`]), else it builds into
/// a [`Capped`] string of [`CallCtx::room`] bytes, which refuses to grow past it. What is built is
/// charged to the budget, so neither one value nor a loop of them can take more memory than the
/// limits.
pub struct CallCtx {
    /// Largest string or list a function may build, in bytes or elements.
    pub max_value_len: usize,
    /// Most bytes all functions may build in one execution.
    pub max_built: u64,
    /// Bytes built so far (list and map elements at [`ELEMENT_BYTES`] each, and
    /// [`HEADER_BYTES`] for each list, map, or string of a list).
    pub built: u64,
    /// Work done by functions besides building (comparisons, moves), in steps.
    pub cost: u64,
    /// Most work one execution may do ([`crate::Limits::max_steps`]).
    pub max_work: u64,
}

impl CallCtx {
    /// A context with nothing built yet.
    pub fn new(limits: &crate::Limits) -> CallCtx {
        CallCtx {
            max_value_len: limits.max_value_len,
            max_built: limits.max_built,
            built: 0,
            cost: 0,
            max_work: limits.max_steps,
        }
    }

    /// Ask to do `n` units of work at once (comparing every pair of a list): refused when it
    /// would pass the step limit, before it starts.
    pub fn work(&mut self, n: u64) -> Result<(), CallError> {
        self.cost = self.cost.saturating_add(n);
        if self.cost > self.max_work {
            return Err(CallError::Limit(format!(
                "{n} steps of work exceed this engine's limit of {} steps (max_steps)",
                self.max_work
            )));
        }
        Ok(())
    }

    /// Ask to build a string of `n` bytes: refused past the value limit or the budget left, else
    /// charged.
    pub fn reserve_bytes(&mut self, n: usize) -> Result<(), CallError> {
        if n > self.max_value_len {
            return Err(self.value_error(&format!("{n} bytes")));
        }
        self.charge(n as u64, &format!("{n} more bytes"))
    }

    /// Ask to build a list of `n` elements (or a map of `n` values, keys and values counted):
    /// refused past the value limit or the budget left, else charged.
    pub fn reserve_elements(&mut self, n: usize) -> Result<(), CallError> {
        if n > self.max_value_len {
            return Err(self.value_error(&format!("{n} elements")));
        }
        self.reserve_parts(1, n, 0, 0)
    }

    /// Ask to build a list of `n` new strings of `bytes` bytes in all.
    pub fn reserve_strings(&mut self, n: usize, bytes: usize) -> Result<(), CallError> {
        if n > self.max_value_len {
            return Err(self.value_error(&format!("{n} elements")));
        }
        self.reserve_parts(1, n, n, bytes)
    }

    /// Ask to build `lists` lists or maps of `elements` elements in all, and `strings` strings
    /// of `bytes` bytes in all (parts of a larger value, each checked against the value limit by
    /// what it is part of): refused past the budget left, else charged.
    pub fn reserve_parts(
        &mut self,
        lists: usize,
        elements: usize,
        strings: usize,
        bytes: usize,
    ) -> Result<(), CallError> {
        let total = (elements as u64)
            .saturating_mul(ELEMENT_BYTES)
            .saturating_add(
                (lists as u64)
                    .saturating_add(strings as u64)
                    .saturating_mul(HEADER_BYTES),
            )
            .saturating_add(bytes as u64);
        let what = if elements == 0 {
            format!("{total} more bytes")
        } else {
            format!("{elements} more elements ({total} bytes)")
        };
        self.charge(total, &what)
    }

    /// The longest string a function may build now: the value limit, or the budget left if less.
    pub fn room(&self) -> usize {
        let left = self.max_built.saturating_sub(self.built);
        self.max_value_len
            .min(usize::try_from(left).unwrap_or(usize::MAX))
    }

    /// The error for a string that grew past [`CallCtx::room`].
    pub fn too_long(&self, room: usize) -> CallError {
        if room >= self.max_value_len {
            self.value_error(&format!("more than {room} bytes"))
        } else {
            self.budget_error(&format!("more than {room} more bytes"))
        }
    }

    /// Take a string built within [`CallCtx::room`] (into a [`Capped`] of that cap) as a value.
    pub fn take(&mut self, text: Capped) -> Result<Value, CallError> {
        let room = text.cap();
        match text.finish() {
            Some(s) => {
                self.reserve_bytes(s.len())?;
                Ok(Value::string(s))
            }
            None => Err(self.too_long(room)),
        }
    }

    fn charge(&mut self, bytes: u64, what: &str) -> Result<(), CallError> {
        match self.built.checked_add(bytes) {
            Some(total) if total <= self.max_built => {
                self.built = total;
                Ok(())
            }
            _ => Err(self.budget_error(what)),
        }
    }

    fn value_error(&self, what: &str) -> CallError {
        CallError::Limit(format!(
            "result of {what} exceeds this engine's limit of {} bytes or elements for one value \
             (max_value_len)",
            self.max_value_len
        ))
    }

    fn budget_error(&self, what: &str) -> CallError {
        CallError::Limit(format!(
            "building {what} exceeds this engine's limit of {} bytes built by one execution \
             (max_built; {} built so far)",
            self.max_built, self.built
        ))
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
            def(vec![any()], true, |c, a| {
                let room = c.room();
                printed(c, room, gofmt::sprint_within(&a, room))
            }),
        );
        funcs.insert(
            "println",
            def(vec![any()], true, |c, a| {
                let room = c.room();
                printed(c, room, gofmt::sprintln_within(&a, room))
            }),
        );
        funcs.insert(
            "printf",
            def(vec![t(Type::String), any()], true, builtin_printf),
        );
        funcs.insert(
            "html",
            def(vec![any()], true, |c, a| escaped(c, &a, html_escape)),
        );
        funcs.insert(
            "js",
            def(vec![any()], true, |c, a| escaped(c, &a, js_escape)),
        );
        funcs.insert(
            "urlquery",
            def(vec![any()], true, |c, a| escaped(c, &a, query_escape)),
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

/// A string no longer than (a small multiple of) an argument, charged once built: it cannot
/// multiply memory, and a loop of such calls still meets the budget.
pub(crate) fn str_result(c: &mut CallCtx, s: String) -> Result<Value, CallError> {
    c.reserve_bytes(s.len())?;
    Ok(Value::Str(Rc::from(s)))
}

/// A part of an argument as a new string: its length is asked for before it is copied.
pub(crate) fn str_slice(c: &mut CallCtx, s: &str) -> Result<Value, CallError> {
    c.reserve_bytes(s.len())?;
    Ok(Value::str(s))
}

/// Text printed within `room` bytes, as a value.
fn printed(
    c: &mut CallCtx,
    room: usize,
    text: Result<String, gofmt::TooLong>,
) -> Result<Value, CallError> {
    match text {
        Ok(text) => {
            c.reserve_bytes(text.len())?;
            Ok(Value::string(text))
        }
        Err(gofmt::TooLong) => Err(c.too_long(room)),
    }
}

/// `html`, `js` and `urlquery`: Go's `evalArgs` (one string argument as is, anything else
/// printed), escaped, within the room left.
fn escaped(
    c: &mut CallCtx,
    args: &[Value],
    escape: fn(&mut Capped, &str),
) -> Result<Value, CallError> {
    let room = c.room();
    let mut out = Capped::new(room);
    if let [Value::Str(s)] = args {
        escape(&mut out, s);
    } else {
        let text = gofmt::sprint_within(args, room).map_err(|_| c.too_long(room))?;
        escape(&mut out, &text);
    }
    c.take(out)
}

fn builtin_printf(c: &mut CallCtx, a: Vec<Value>) -> Result<Value, CallError> {
    let format = a[0].as_str().unwrap_or_default();
    let room = c.room();
    printed(c, room, gofmt::sprintf_within(format, &a[1..], room))
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

/// `template.HTMLEscapeString`, appended to `out`.
pub fn html_escape(out: &mut Capped, s: &str) {
    for c in s.chars() {
        if out.over() {
            return;
        }
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
}

/// `template.JSEscapeString`, appended to `out`.
pub fn js_escape(out: &mut Capped, s: &str) {
    for c in s.chars() {
        if out.over() {
            return;
        }
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
}

/// `url.QueryEscape`, appended to `out`.
pub fn query_escape(out: &mut Capped, s: &str) {
    for b in s.bytes() {
        if out.over() {
            return;
        }
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
}
