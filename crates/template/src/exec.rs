//! The evaluator: walks a parsed template over a [`Value`], following Go's `text/template/exec.go`
//! step by step, including where it records the "current node" that error messages name.

use std::collections::HashMap;
use std::rc::Rc;

use crate::error::{ExecError, ExecErrorKind, ParseError};
use crate::funcs::{CallCtx, CallError, FuncDef, Param, Registry};
use crate::gofmt;
use crate::parse::{
    self, Arg, BranchNode, CommandNode, ListNode, Node, NumberNode, PipeNode, Tree, VariableNode,
};
use crate::value::{Kind, Type, Value, lookup_field_exported};

/// Resource limits for one execution. Go has none of these; they keep arbitrary template text from
/// running away. Exceeding one is an [`ExecErrorKind::Limit`] error that names the limit and its
/// value, at the line and column of the action that passed it.
///
/// Together they bound the memory of a render: besides the data and the template, it holds the
/// output (`max_output`) and what functions built (`max_built`), and a function checks both its
/// result's size (`max_value_len`) and the budget left before it allocates.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest output, in bytes (default 16 MiB).
    pub max_output: usize,
    /// Deepest nesting of `{{template}}` calls (default 100; Go allows 100,000).
    pub max_template_depth: usize,
    /// Largest string or list a function may build, in bytes or elements (default 4 MiB); bounds
    /// `repeat`, `indent`, `printf`, `append`...
    pub max_value_len: usize,
    /// Most bytes all function calls of one execution may build, together (default 64 MiB): every
    /// string, list and map a function returns (or `deepCopy` copies) is charged, whether it is
    /// kept or not, so a loop that builds many values each under `max_value_len` stops too. List
    /// and map elements count as a value slot each (32 bytes on 64-bit targets; a map entry is
    /// two), and each list or map, and each string made as part of one, 64 bytes more.
    pub max_built: u64,
    /// Most evaluation steps (actions, commands, loop iterations, plus the work of functions
    /// that is not building: comparing pairs, moving map entries) one execution may take
    /// (default 50 million).
    pub max_steps: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_output: 16 << 20,
            max_template_depth: 100,
            max_value_len: 4 << 20,
            max_built: 64 << 20,
            max_steps: 50_000_000,
        }
    }
}

/// A parsed template and the templates it defines.
pub struct Template {
    name: String,
    text: Rc<str>,
    trees: HashMap<String, Rc<Tree>>,
    registry: Rc<Registry>,
}

thread_local! {
    static REGISTRY: Rc<Registry> = Rc::new(Registry::new());
    static GO_REGISTRY: Rc<Registry> = Rc::new(Registry::go_builtins());
}

impl Template {
    /// Parse `text` as the template `name`, with Go's builtins and Sprig's hermetic functions.
    pub fn parse(name: &str, text: &str) -> Result<Template, ParseError> {
        Template::parse_with(name, text, REGISTRY.with(Rc::clone))
    }

    /// Parse `text` as the template `name` with Go's builtin functions only (a `text/template`
    /// given no `FuncMap`): a Sprig function is `function "x" not defined`.
    pub fn parse_go(name: &str, text: &str) -> Result<Template, ParseError> {
        Template::parse_with(name, text, GO_REGISTRY.with(Rc::clone))
    }

    fn parse_with(name: &str, text: &str, registry: Rc<Registry>) -> Result<Template, ParseError> {
        let trees = parse::parse(name, text, &|f| registry.has(f))?;
        Ok(Template {
            name: name.to_owned(),
            text: Rc::from(text),
            trees: trees.into_iter().map(|(k, v)| (k, Rc::new(v))).collect(),
            registry,
        })
    }

    /// The template's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the template (or a template it defines) first names the field `name`: 1-based line and
    /// column (in characters) of the node.
    pub fn field_position(&self, name: &str) -> Option<(usize, usize)> {
        let pos = self
            .trees
            .values()
            .filter_map(|t| t.field_use(name))
            .min()?;
        let pos = floor_char_boundary(&self.text, pos.min(self.text.len()));
        let before = &self.text[..pos];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Some((line, before[line_start..].chars().count() + 1))
    }

    /// Execute with the default [`Limits`]; returns the output bytes.
    pub fn execute(&self, data: &Value) -> Result<Vec<u8>, ExecError> {
        self.execute_with_limits(data, &Limits::default())
    }

    /// Execute with the given limits.
    pub fn execute_with_limits(&self, data: &Value, limits: &Limits) -> Result<Vec<u8>, ExecError> {
        let mut s = State {
            tmpl: self,
            tmpl_name: self.name.clone(),
            out: Vec::new(),
            node: At::None,
            vars: vec![("$".to_owned(), data.clone())],
            depth: 0,
            limits: limits.clone(),
            steps: 0,
            ctx: CallCtx::new(limits),
        };
        let Some(tree) = self.trees.get(&self.name).cloned() else {
            return Err(ExecError {
                message: format!(
                    "template: {}: {} is an incomplete or empty template",
                    self.name,
                    gofmt::quote(&self.name)
                ),
                kind: ExecErrorKind::Template,
            });
        };
        match s.walk_list(data, &tree.root) {
            Ok(()) => Ok(s.out),
            Err(Flow::Err(e)) => Err(e),
            Err(Flow::Break | Flow::Continue) => Ok(s.out),
        }
    }
}

enum Flow {
    Break,
    Continue,
    Err(ExecError),
}

type R<T> = Result<T, Flow>;

#[derive(Clone, Copy)]
enum At<'a> {
    None,
    Node(&'a Node),
    List(&'a ListNode),
    Pipe(&'a PipeNode),
    Cmd(&'a CommandNode),
    Arg(&'a Arg),
    Var(&'a VariableNode),
}

impl At<'_> {
    fn pos(&self) -> usize {
        match self {
            At::None => 0,
            At::Node(n) => match n {
                Node::Text { pos, .. }
                | Node::Action { pos, .. }
                | Node::Template { pos, .. }
                | Node::Break { pos }
                | Node::Continue { pos } => *pos,
                Node::If(b) | Node::Range(b) | Node::With(b) => b.pos,
            },
            At::List(l) => l.pos,
            At::Pipe(p) => p.pos,
            At::Cmd(c) => c.pos,
            At::Arg(a) => a.pos(),
            At::Var(v) => v.pos,
        }
    }

    fn context(&self) -> String {
        match self {
            At::None => String::new(),
            At::Node(n) => n.to_string(),
            At::List(l) => l.to_string(),
            At::Pipe(p) => p.to_string(),
            At::Cmd(c) => c.to_string(),
            At::Arg(a) => a.to_string(),
            At::Var(v) => v.to_string(),
        }
    }
}

struct State<'a> {
    tmpl: &'a Template,
    tmpl_name: String,
    out: Vec<u8>,
    node: At<'a>,
    vars: Vec<(String, Value)>,
    depth: usize,
    limits: Limits,
    steps: u64,
    ctx: CallCtx,
}

enum Callee<'f> {
    Func(&'f FuncDef),
    /// A method of the receiver's type, with the receiver.
    Method(Rc<crate::value::NamedType>, usize, Value),
}

fn is_true(v: &Value) -> bool {
    v.truth()
}

impl<'a> State<'a> {
    fn at(&mut self, n: At<'a>) {
        self.node = n;
    }

    fn err(&self, msg: String) -> Flow {
        self.err_kind(msg, ExecErrorKind::Template)
    }

    fn err_kind(&self, msg: String, kind: ExecErrorKind) -> Flow {
        let message = match self.node {
            At::None => format!("template: {}: {}", self.tmpl_name, msg),
            n => {
                let pos = n.pos().min(self.tmpl.text.len());
                let text = &self.tmpl.text[..floor_char_boundary(&self.tmpl.text, pos)];
                let col = match text.rfind('\n') {
                    Some(i) => text.len() - (i + 1),
                    None => text.len(),
                };
                let line = 1 + text.matches('\n').count();
                format!(
                    "template: {}:{}:{}: executing {} at <{}>: {}",
                    self.tmpl.name,
                    line,
                    col,
                    gofmt::quote(&self.tmpl_name),
                    n.context(),
                    msg
                )
            }
        };
        Flow::Err(ExecError { message, kind })
    }

    fn step(&mut self) -> R<()> {
        self.steps += 1;
        if self.steps + self.ctx.cost > self.limits.max_steps {
            return Err(self.err_kind(
                format!(
                    "execution exceeds this engine's limit of {} steps (max_steps)",
                    self.limits.max_steps
                ),
                ExecErrorKind::Limit,
            ));
        }
        Ok(())
    }

    fn write(&mut self, b: &[u8]) -> R<()> {
        if b.len() > self.output_room() {
            return Err(self.output_error());
        }
        self.out.extend_from_slice(b);
        Ok(())
    }

    /// Bytes the output may still take.
    fn output_room(&self) -> usize {
        self.limits.max_output.saturating_sub(self.out.len())
    }

    fn output_error(&self) -> Flow {
        self.err_kind(
            format!(
                "output exceeds this engine's limit of {} bytes (max_output)",
                self.limits.max_output
            ),
            ExecErrorKind::Limit,
        )
    }

    fn set_var(&mut self, name: &str, value: Value) -> R<()> {
        for v in self.vars.iter_mut().rev() {
            if v.0 == name {
                v.1 = value;
                return Ok(());
            }
        }
        Err(self.err(format!("undefined variable: {name}")))
    }

    fn set_top_var(&mut self, n: usize, value: Value) {
        let len = self.vars.len();
        if let Some(v) = self.vars.get_mut(len - n) {
            v.1 = value;
        }
    }

    fn var_value(&self, name: &str) -> R<Value> {
        for v in self.vars.iter().rev() {
            if v.0 == name {
                return Ok(v.1.clone());
            }
        }
        Err(self.err(format!("undefined variable: {name}")))
    }

    fn walk_list(&mut self, dot: &Value, list: &'a ListNode) -> R<()> {
        self.at(At::List(list));
        for n in &list.nodes {
            self.walk(dot, n)?;
        }
        Ok(())
    }

    fn walk(&mut self, dot: &Value, node: &'a Node) -> R<()> {
        self.at(At::Node(node));
        self.step()?;
        match node {
            Node::Action { pipe, .. } => {
                let val = self.eval_pipeline(dot, Some(pipe))?;
                if pipe.decl.is_empty() {
                    self.print_value(node, &val)?;
                }
                Ok(())
            }
            Node::Break { .. } => Err(Flow::Break),
            Node::Continue { .. } => Err(Flow::Continue),
            Node::If(b) => self.walk_if_or_with(false, dot, b),
            Node::With(b) => self.walk_if_or_with(true, dot, b),
            Node::Range(b) => self.walk_range(dot, node, b),
            Node::Template { name, pipe, .. } => self.walk_template(dot, node, name, pipe.as_ref()),
            Node::Text { text, .. } => self.write(text.as_bytes()),
        }
    }

    fn walk_if_or_with(&mut self, with: bool, dot: &Value, b: &'a BranchNode) -> R<()> {
        let mark = self.vars.len();
        let r = (|| {
            let val = self.eval_pipeline(dot, Some(&b.pipe))?;
            if is_true(&val) {
                if with {
                    self.walk_list(&val, &b.list)
                } else {
                    self.walk_list(dot, &b.list)
                }
            } else if let Some(e) = &b.else_list {
                self.walk_list(dot, e)
            } else {
                Ok(())
            }
        })();
        self.vars.truncate(mark);
        r
    }

    fn walk_range(&mut self, dot: &Value, node: &'a Node, r: &'a BranchNode) -> R<()> {
        self.at(At::Node(node));
        let outer = self.vars.len();
        let result = self.walk_range_inner(dot, r);
        self.vars.truncate(outer);
        match result {
            Err(Flow::Break) => Ok(()),
            other => other,
        }
    }

    fn one_iteration(
        &mut self,
        r: &'a BranchNode,
        mark: usize,
        index: Value,
        elem: Value,
    ) -> R<()> {
        self.step()?;
        if !r.pipe.decl.is_empty() {
            self.set_top_var(1, elem.clone());
        }
        if r.pipe.decl.len() > 1 {
            self.set_top_var(2, index);
        }
        let res = self.walk_list(&elem, &r.list);
        self.vars.truncate(mark);
        match res {
            Err(Flow::Continue) => Ok(()),
            other => other,
        }
    }

    fn walk_range_inner(&mut self, dot: &Value, r: &'a BranchNode) -> R<()> {
        let val = self.eval_pipeline(dot, Some(&r.pipe))?;
        let mark = self.vars.len();
        match &val {
            Value::Slice(s) => {
                if !s.items.is_empty() {
                    let s = s.clone();
                    for (i, item) in s.items.iter().enumerate() {
                        self.one_iteration(r, mark, Value::int(i as i64), item.clone())?;
                    }
                    return Ok(());
                }
            }
            Value::Nil(t) if matches!(t.kind(), Kind::Slice | Kind::Map) => {}
            Value::Map(_) => {
                let entries = val.map_entries();
                if !entries.is_empty() {
                    for (k, v) in entries {
                        self.one_iteration(r, mark, k, v)?;
                    }
                    return Ok(());
                }
            }
            Value::Invalid => {}
            Value::Int(n, ty) => {
                if r.pipe.decl.len() > 1 {
                    return Err(self.err(format!(
                        "can't use {} to iterate over more than one variable",
                        gofmt::sprint_value(&val)
                    )));
                }
                if *n > 0 {
                    let (n, ty) = (*n, ty.clone());
                    for i in 0..n {
                        self.one_iteration(r, mark, Value::Invalid, Value::Int(i, ty.clone()))?;
                    }
                    return Ok(());
                }
            }
            v => {
                return Err(self.err(format!(
                    "range can't iterate over {}",
                    gofmt::sprint_value(v)
                )));
            }
        }
        if let Some(e) = &r.else_list {
            self.walk_list(dot, e)?;
        }
        Ok(())
    }

    fn walk_template(
        &mut self,
        dot: &Value,
        node: &'a Node,
        name: &str,
        pipe: Option<&'a PipeNode>,
    ) -> R<()> {
        self.at(At::Node(node));
        let tmpl: &'a Template = self.tmpl;
        let Some(tree) = tmpl.trees.get(name) else {
            return Err(self.err(format!("template {} not defined", gofmt::quote(name))));
        };
        if self.depth >= self.limits.max_template_depth {
            return Err(self.err_kind(
                format!(
                    "exceeded maximum template depth ({})",
                    self.limits.max_template_depth
                ),
                ExecErrorKind::Limit,
            ));
        }
        let new_dot = self.eval_pipeline(dot, pipe)?;
        let saved_vars = std::mem::replace(&mut self.vars, vec![("$".to_owned(), new_dot.clone())]);
        let saved_name = std::mem::replace(&mut self.tmpl_name, name.to_owned());
        self.depth += 1;
        let tree_ref: &'a Tree = tree;
        let r = self.walk_list(&new_dot, &tree_ref.root);
        self.depth -= 1;
        self.vars = saved_vars;
        self.tmpl_name = saved_name;
        r
    }

    fn eval_pipeline(&mut self, dot: &Value, pipe: Option<&'a PipeNode>) -> R<Value> {
        let Some(pipe) = pipe else {
            return Ok(Value::Invalid);
        };
        self.at(At::Pipe(pipe));
        let mut value: Option<Value> = None;
        for cmd in &pipe.cmds {
            let v = self.eval_command(dot, cmd, value.take())?;
            value = Some(v.unwrap_nil_interface());
        }
        let value = value.unwrap_or(Value::Invalid);
        for var in &pipe.decl {
            if pipe.is_assign {
                self.set_var(&var.ident[0], value.clone())?;
            } else {
                self.vars.push((var.ident[0].clone(), value.clone()));
            }
        }
        Ok(value)
    }

    fn not_a_function(&self, args: &'a [Arg], final_: &Option<Value>) -> R<()> {
        if args.len() > 1 || final_.is_some() {
            return Err(self.err(format!("can't give argument to non-function {}", args[0])));
        }
        Ok(())
    }

    fn eval_command(
        &mut self,
        dot: &Value,
        cmd: &'a CommandNode,
        final_: Option<Value>,
    ) -> R<Value> {
        self.step()?;
        let first = &cmd.args[0];
        match first {
            Arg::Field { ident, .. } => {
                return self.eval_field_chain(
                    dot,
                    dot.clone(),
                    At::Arg(first),
                    ident,
                    Some(&cmd.args),
                    final_,
                );
            }
            Arg::Chain { .. } => return self.eval_chain_node(dot, first, Some(&cmd.args), final_),
            Arg::Identifier { name, .. } => {
                return self.eval_function(dot, first, name, At::Cmd(cmd), Some(&cmd.args), final_);
            }
            Arg::Pipe(p) => {
                self.not_a_function(&cmd.args, &final_)?;
                return self.eval_pipeline(dot, Some(p));
            }
            Arg::Variable(v) => return self.eval_variable_node(dot, v, Some(&cmd.args), final_),
            _ => {}
        }
        self.at(At::Arg(first));
        self.not_a_function(&cmd.args, &final_)?;
        match first {
            Arg::Bool { val, .. } => Ok(Value::Bool(*val)),
            Arg::Dot { .. } => Ok(dot.clone()),
            Arg::Nil { .. } => Err(self.err("nil is not a command".to_owned())),
            Arg::Number(n) => self.ideal_constant(first, n),
            Arg::String { text, .. } => Ok(Value::Str(text.clone())),
            _ => Err(self.err(format!(
                "can't evaluate command {}",
                gofmt::quote(&first.to_string())
            ))),
        }
    }

    fn ideal_constant(&mut self, node: &'a Arg, n: &NumberNode) -> R<Value> {
        self.at(At::Arg(node));
        let is_hex_int = n.text.len() > 2
            && n.text.starts_with('0')
            && matches!(n.text.as_bytes()[1], b'x' | b'X')
            && !n.text.contains(['p', 'P']);
        let is_rune = n.text.starts_with('\'');
        if n.is_complex {
            return Ok(Value::Complex(n.complex.0, n.complex.1));
        }
        if n.is_float && !is_hex_int && !is_rune && n.text.contains(['.', 'e', 'E', 'p', 'P']) {
            return Ok(Value::Float(n.float64));
        }
        if n.is_int {
            return Ok(Value::int(n.int64));
        }
        if n.is_uint {
            return Err(self.err(format!("{} overflows int", n.text)));
        }
        Ok(Value::Invalid)
    }

    fn eval_chain_node(
        &mut self,
        dot: &Value,
        chain: &'a Arg,
        args: Option<&'a [Arg]>,
        final_: Option<Value>,
    ) -> R<Value> {
        self.at(At::Arg(chain));
        let Arg::Chain { node, fields, .. } = chain else {
            return Ok(Value::Invalid);
        };
        if fields.is_empty() {
            return Err(self.err("internal error: no fields in evalChainNode".to_owned()));
        }
        if let Arg::Nil { .. } = **node {
            return Err(self.err(format!("indirection through explicit nil in {chain}")));
        }
        let pipe = self.eval_arg(dot, None, node)?;
        self.eval_field_chain(dot, pipe, At::Arg(chain), fields, args, final_)
    }

    fn eval_variable_node(
        &mut self,
        dot: &Value,
        v: &'a VariableNode,
        args: Option<&'a [Arg]>,
        final_: Option<Value>,
    ) -> R<Value> {
        self.at(At::Var(v));
        let value = self.var_value(&v.ident[0])?;
        if v.ident.len() == 1 {
            if let Some(a) = args {
                self.not_a_function(a, &final_)?;
            } else if final_.is_some() {
                return Err(self.err(format!("can't give argument to non-function {v}")));
            }
            return Ok(value);
        }
        self.eval_field_chain(dot, value, At::Var(v), &v.ident[1..], args, final_)
    }

    fn eval_field_chain(
        &mut self,
        dot: &Value,
        mut receiver: Value,
        node: At<'a>,
        ident: &'a [String],
        args: Option<&'a [Arg]>,
        final_: Option<Value>,
    ) -> R<Value> {
        self.at(node);
        let n = ident.len();
        for name in &ident[..n - 1] {
            receiver = self.eval_field(dot, name, node, None, None, receiver)?;
        }
        self.eval_field(dot, &ident[n - 1], node, args, final_, receiver)
    }

    fn eval_function(
        &mut self,
        dot: &Value,
        node: &'a Arg,
        name: &str,
        cmd: At<'a>,
        args: Option<&'a [Arg]>,
        final_: Option<Value>,
    ) -> R<Value> {
        self.at(At::Arg(node));
        let registry = self.tmpl.registry.clone();
        let Some(f) = registry.funcs.get(name) else {
            if crate::sprig::HERMETIC_NAMES.contains(&name) {
                return Err(self.err_kind(
                    format!(
                        "function {} is not supported by this engine",
                        gofmt::quote(name)
                    ),
                    ExecErrorKind::Unsupported,
                ));
            }
            return Err(self.err(format!("{} is not a defined function", gofmt::quote(name))));
        };
        self.eval_call(dot, Callee::Func(f), cmd, name, args, final_)
    }

    fn eval_field(
        &mut self,
        dot: &Value,
        field: &str,
        node: At<'a>,
        args: Option<&'a [Arg]>,
        final_: Option<Value>,
        receiver: Value,
    ) -> R<Value> {
        if matches!(receiver, Value::Invalid) {
            return Ok(Value::Invalid);
        }
        let typ = receiver.type_name();
        if let Value::Nil(Type::Any) = receiver {
            return Err(self.err(format!("nil pointer evaluating {typ}.{field}")));
        }
        if let Value::Struct(s) = &receiver
            && let Some(i) = s.ty.methods.iter().position(|m| m.name == field)
        {
            let ty = s.ty.clone();
            return self.eval_call(
                dot,
                Callee::Method(ty, i, receiver),
                node,
                field,
                args,
                final_,
            );
        }
        let has_args = args.is_some_and(|a| a.len() > 1) || final_.is_some();
        match &receiver {
            Value::Struct(s) => {
                if let Some((v, exported)) = lookup_field_exported(s, field) {
                    if !exported {
                        return Err(self.err(format!(
                            "{field} is an unexported field of struct type {typ}"
                        )));
                    }
                    if has_args {
                        return Err(self.err(format!(
                            "{field} has arguments but cannot be invoked as function"
                        )));
                    }
                    return Ok(v);
                }
            }
            Value::Map(_) | Value::Nil(_) if receiver.kind() == Kind::Map => {
                let ty = receiver.ty().unwrap_or(Type::Any);
                if let Some((Type::String, _)) = ty.map_types() {
                    if has_args {
                        return Err(self.err(format!("{field} is not a method but has arguments")));
                    }
                    return Ok(receiver
                        .map_get(&Value::str(field))
                        .unwrap_or(Value::Invalid));
                }
            }
            _ => {}
        }
        Err(self.err(format!("can't evaluate field {field} in type {typ}")))
    }

    fn eval_call(
        &mut self,
        dot: &Value,
        callee: Callee<'_>,
        node: At<'a>,
        name: &str,
        args: Option<&'a [Arg]>,
        final_: Option<Value>,
    ) -> R<Value> {
        let args: &'a [Arg] = match args {
            Some(a) if !a.is_empty() => &a[1..],
            _ => &[],
        };
        let method_params: Vec<Param>;
        let (params, variadic): (&[Param], bool) = match &callee {
            Callee::Func(f) => (&f.params, f.variadic),
            Callee::Method(ty, i, _) => {
                let m = &ty.methods[*i];
                method_params = m.params.iter().cloned().map(Param::T).collect();
                (&method_params, m.variadic)
            }
        };
        let num_in = args.len() + usize::from(final_.is_some());
        if variadic {
            if num_in < params.len() - 1 {
                return Err(self.err(format!(
                    "wrong number of args for {name}: want at least {} got {}",
                    params.len() - 1,
                    args.len()
                )));
            }
        } else if num_in != params.len() {
            return Err(self.err(format!(
                "wrong number of args for {name}: want {} got {num_in}",
                params.len()
            )));
        }
        let f = match callee {
            Callee::Method(ty, i, receiver) => {
                let argv = self.eval_args(dot, args, final_, params, variadic, num_in)?;
                return Ok((ty.methods[i].call)(&receiver, &argv));
            }
            Callee::Func(f) => f,
        };
        if name == "and" || name == "or" {
            let mut v = Value::Invalid;
            for arg in args {
                v = self.eval_arg(dot, Some(&Param::Reflect), arg)?;
                if is_true(&v) == (name == "or") {
                    return Ok(v);
                }
            }
            if let Some(fin) = final_ {
                v = self.validate_type(fin, Some(&Param::Reflect))?;
            }
            return Ok(v);
        }
        let argv = self.eval_args(dot, args, final_, params, variadic, num_in)?;
        // A function may read all of its arguments (`contains`, `regexMatch`, `eq` on long
        // strings): the steps pay for that too, once it has run (a call refused for what it would
        // build says so), so a loop of scans of a 4 MiB string ends in seconds, not hours.
        let scan = argv.iter().map(scan_steps).fold(0u64, u64::saturating_add);
        let result = (f.imp)(&mut self.ctx, argv).and_then(|v| {
            if scan > 0 {
                self.ctx.work(scan)?;
            }
            Ok(v)
        });
        match result {
            Ok(v) => Ok(v),
            Err(e) => {
                self.at(node);
                Err(match e {
                    CallError::Msg(m) => self.err(format!("error calling {name}: {m}")),
                    CallError::Limit(m) => {
                        self.err_kind(format!("error calling {name}: {m}"), ExecErrorKind::Limit)
                    }
                    CallError::Unsupported => self.err_kind(
                        format!(
                            "function {} is not supported by this engine",
                            gofmt::quote(name)
                        ),
                        ExecErrorKind::Unsupported,
                    ),
                })
            }
        }
    }

    /// Evaluate a call's arguments against its parameter types (Go's `evalCall` argument loop).
    fn eval_args(
        &mut self,
        dot: &Value,
        args: &'a [Arg],
        final_: Option<Value>,
        params: &[Param],
        variadic: bool,
        num_in: usize,
    ) -> R<Vec<Value>> {
        let num_fixed = if variadic {
            params.len() - 1
        } else {
            args.len()
        };
        let mut argv = Vec::with_capacity(num_in);
        let mut i = 0;
        while i < num_fixed && i < args.len() {
            argv.push(self.eval_arg(dot, Some(&params[i]), &args[i])?);
            i += 1;
        }
        if variadic {
            let elem = &params[params.len() - 1];
            while i < args.len() {
                argv.push(self.eval_arg(dot, Some(elem), &args[i])?);
                i += 1;
            }
        }
        if let Some(fin) = final_ {
            let t = if variadic {
                if num_in - 1 < num_fixed {
                    &params[num_in - 1]
                } else {
                    &params[params.len() - 1]
                }
            } else {
                &params[params.len() - 1]
            };
            argv.push(self.validate_type(fin, Some(t))?);
        }
        Ok(argv)
    }

    fn validate_type(&mut self, value: Value, typ: Option<&Param>) -> R<Value> {
        let Some(typ) = typ else { return Ok(value) };
        let ty = match typ {
            Param::Reflect => return Ok(value),
            Param::T(t) => t,
        };
        if matches!(value, Value::Invalid) {
            if ty.can_be_nil() {
                return Ok(ty.zero());
            }
            return Err(self.err(format!("invalid value; expected {ty}")));
        }
        let vt = value.ty().unwrap_or(Type::Any);
        if !vt.assignable_to(ty) {
            return Err(self.err(format!("wrong type for value; expected {ty}; got {vt}")));
        }
        Ok(value)
    }

    fn eval_arg(&mut self, dot: &Value, typ: Option<&Param>, n: &'a Arg) -> R<Value> {
        self.at(At::Arg(n));
        match n {
            Arg::Dot { .. } => return self.validate_type(dot.clone(), typ),
            Arg::Nil { .. } => {
                return match typ {
                    Some(Param::Reflect) => Ok(Value::Invalid),
                    Some(Param::T(t)) if t.can_be_nil() => Ok(t.zero()),
                    Some(Param::T(t)) => Err(self.err(format!("cannot assign nil to {t}"))),
                    None => Err(self.err("cannot assign nil to <nil>".to_owned())),
                };
            }
            Arg::Field { ident, .. } => {
                let v = self.eval_field_chain(
                    dot,
                    dot.clone(),
                    At::Arg(n),
                    ident,
                    Some(std::slice::from_ref(n)),
                    None,
                )?;
                return self.validate_type(v, typ);
            }
            Arg::Variable(v) => {
                let v = self.eval_variable_node(dot, v, None, None)?;
                return self.validate_type(v, typ);
            }
            Arg::Pipe(p) => {
                let v = self.eval_pipeline(dot, Some(p))?;
                return self.validate_type(v, typ);
            }
            Arg::Identifier { name, .. } => {
                let v = self.eval_function(dot, n, name, At::Arg(n), None, None)?;
                return self.validate_type(v, typ);
            }
            Arg::Chain { .. } => {
                let v = self.eval_chain_node(dot, n, None, None)?;
                return self.validate_type(v, typ);
            }
            _ => {}
        }
        let ty = match typ {
            Some(Param::Reflect) | Some(Param::T(Type::Any)) => {
                return self.eval_empty_interface(dot, n);
            }
            Some(Param::T(t)) => t.clone(),
            None => return self.eval_empty_interface(dot, n),
        };
        match (ty.kind(), n) {
            (Kind::Bool, Arg::Bool { val, .. }) => Ok(Value::Bool(*val)),
            (Kind::Bool, _) => Err(self.err(format!("expected bool; found {n}"))),
            (Kind::Float64, Arg::Number(num)) if num.is_float => Ok(Value::Float(num.float64)),
            (Kind::Float64, _) => Err(self.err(format!("expected float; found {n}"))),
            (Kind::Int | Kind::Int64 | Kind::Int32, Arg::Number(num)) if num.is_int => {
                Ok(Value::Int(num.int64, ty))
            }
            (Kind::Int | Kind::Int64 | Kind::Int32, _) => {
                Err(self.err(format!("expected integer; found {n}")))
            }
            (Kind::Uint8, Arg::Number(num)) if num.is_uint => Ok(Value::Int(num.uint64 as i64, ty)),
            (Kind::Uint8, _) => Err(self.err(format!("expected unsigned integer; found {n}"))),
            (Kind::Complex128, Arg::Number(num)) if num.is_complex => {
                Ok(Value::Complex(num.complex.0, num.complex.1))
            }
            (Kind::Complex128, _) => Err(self.err(format!("expected complex; found {n}"))),
            (Kind::String, Arg::String { text, .. }) => Ok(Value::Str(text.clone())),
            (Kind::String, _) => Err(self.err(format!("expected string; found {n}"))),
            _ => Err(self.err(format!("can't handle {n} for arg of type {ty}"))),
        }
    }

    fn eval_empty_interface(&mut self, dot: &Value, n: &'a Arg) -> R<Value> {
        self.at(At::Arg(n));
        match n {
            Arg::Bool { val, .. } => Ok(Value::Bool(*val)),
            Arg::Dot { .. } => Ok(dot.clone()),
            Arg::Field { ident, .. } => {
                self.eval_field_chain(dot, dot.clone(), At::Arg(n), ident, None, None)
            }
            Arg::Identifier { name, .. } => {
                self.eval_function(dot, n, name, At::Arg(n), None, None)
            }
            Arg::Nil { .. } => Err(self.err("evalEmptyInterface: nil (can't happen)".to_owned())),
            Arg::Number(num) => self.ideal_constant(n, num),
            Arg::String { text, .. } => Ok(Value::Str(text.clone())),
            Arg::Variable(v) => self.eval_variable_node(dot, v, None, None),
            Arg::Pipe(p) => self.eval_pipeline(dot, Some(p)),
            Arg::Chain { .. } => Err(self.err(format!(
                "can't handle assignment of {n} to empty interface argument"
            ))),
        }
    }

    fn print_value(&mut self, node: &'a Node, v: &Value) -> R<()> {
        self.at(At::Node(node));
        if let Value::Str(text) = v {
            // fmt.Fprint of a lone string is the string itself.
            return self.write(text.as_bytes());
        }
        let text = match v {
            Value::Invalid => "<no value>".to_owned(),
            // Printed no further than the output may still go.
            v => gofmt::sprint_within(std::slice::from_ref(v), self.output_room())
                .map_err(|_| self.output_error())?,
        };
        self.write(text.as_bytes())
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Bytes of arguments one step of work pays for reading.
const SCAN_BYTES_PER_STEP: u64 = 64;

/// The steps a function pays for reading `v` (a string's bytes, a list's or map's elements, not
/// deeper: what is below was paid for when it was built).
fn scan_steps(v: &Value) -> u64 {
    match v {
        Value::Str(s) => s.len() as u64 / SCAN_BYTES_PER_STEP,
        Value::Slice(l) => l.items.len() as u64 / 8,
        Value::Map(m) => m.entries.borrow().len() as u64 / 8,
        _ => 0,
    }
}
