//! The parser: items into trees of nodes, one tree per template (`define`, `block`), with Go's parse
//! errors (`template: NAME:LINE: ...`) and Go's node positions (execution errors print `NAME:LINE:COL`
//! and the failing node as Go's `String()` writes it).

use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

use crate::error::ParseError;
use crate::lex::{Item, ItemType, lex};

/// Deepest nesting of control structures and parentheses accepted. Go has no such limit; without one,
/// arbitrary input could exhaust the stack.
pub const MAX_NESTING: usize = 200;

/// A list of nodes.
#[derive(Debug, Default)]
pub struct ListNode {
    pub pos: usize,
    pub nodes: Vec<Node>,
}

/// A node of a template body.
#[derive(Debug)]
pub enum Node {
    Text {
        pos: usize,
        text: Rc<str>,
    },
    Action {
        pos: usize,
        pipe: PipeNode,
    },
    If(Box<BranchNode>),
    Range(Box<BranchNode>),
    With(Box<BranchNode>),
    Template {
        pos: usize,
        name: String,
        pipe: Option<PipeNode>,
    },
    Break {
        pos: usize,
    },
    Continue {
        pos: usize,
    },
}

/// `if`, `range` and `with`.
#[derive(Debug)]
pub struct BranchNode {
    pub pos: usize,
    pub pipe: PipeNode,
    pub list: ListNode,
    pub else_list: Option<ListNode>,
}

/// A pipeline with its optional variable declarations.
#[derive(Debug)]
pub struct PipeNode {
    pub pos: usize,
    pub is_assign: bool,
    pub decl: Vec<VariableNode>,
    pub cmds: Vec<CommandNode>,
}

/// `$x` or `$x.Field.Field`.
#[derive(Debug, Clone)]
pub struct VariableNode {
    pub pos: usize,
    pub ident: Vec<String>,
}

/// One command of a pipeline.
#[derive(Debug)]
pub struct CommandNode {
    pub pos: usize,
    pub args: Vec<Arg>,
}

/// A number literal, with every interpretation Go keeps.
#[derive(Debug, Clone)]
pub struct NumberNode {
    pub pos: usize,
    pub is_int: bool,
    pub is_uint: bool,
    pub is_float: bool,
    pub is_complex: bool,
    pub int64: i64,
    pub uint64: u64,
    pub float64: f64,
    pub complex: (f64, f64),
    pub text: String,
}

/// An operand.
#[derive(Debug)]
pub enum Arg {
    Identifier {
        pos: usize,
        name: String,
    },
    Dot {
        pos: usize,
    },
    Nil {
        pos: usize,
    },
    Field {
        pos: usize,
        ident: Vec<String>,
    },
    Variable(VariableNode),
    Chain {
        pos: usize,
        node: Box<Arg>,
        fields: Vec<String>,
    },
    Bool {
        pos: usize,
        val: bool,
    },
    Number(NumberNode),
    String {
        pos: usize,
        quoted: String,
        text: Rc<str>,
    },
    Pipe(Box<PipeNode>),
}

impl Arg {
    /// Byte offset of the node.
    pub fn pos(&self) -> usize {
        match self {
            Arg::Identifier { pos, .. }
            | Arg::Dot { pos }
            | Arg::Nil { pos }
            | Arg::Field { pos, .. }
            | Arg::Chain { pos, .. }
            | Arg::Bool { pos, .. }
            | Arg::String { pos, .. } => *pos,
            Arg::Variable(v) => v.pos,
            Arg::Number(n) => n.pos,
            Arg::Pipe(p) => p.pos,
        }
    }
}

impl fmt::Display for VariableNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.ident.join("."))
    }
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Identifier { name, .. } => f.write_str(name),
            Arg::Dot { .. } => f.write_str("."),
            Arg::Nil { .. } => f.write_str("nil"),
            Arg::Field { ident, .. } => {
                for i in ident {
                    write!(f, ".{i}")?;
                }
                Ok(())
            }
            Arg::Variable(v) => write!(f, "{v}"),
            Arg::Chain { node, fields, .. } => {
                if let Arg::Pipe(p) = &**node {
                    write!(f, "({p})")?;
                } else {
                    write!(f, "{node}")?;
                }
                for field in fields {
                    write!(f, ".{field}")?;
                }
                Ok(())
            }
            Arg::Bool { val, .. } => f.write_str(if *val { "true" } else { "false" }),
            Arg::Number(n) => f.write_str(&n.text),
            Arg::String { quoted, .. } => f.write_str(quoted),
            Arg::Pipe(p) => write!(f, "{p}"),
        }
    }
}

impl fmt::Display for CommandNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            if let Arg::Pipe(p) = a {
                write!(f, "({p})")?;
            } else {
                write!(f, "{a}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for PipeNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.decl.is_empty() {
            for (i, v) in self.decl.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{v}")?;
            }
            f.write_str(" := ")?;
        }
        for (i, c) in self.cmds.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

impl fmt::Display for ListNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for n in &self.nodes {
            write!(f, "{n}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Text { text, .. } => f.write_str(text),
            Node::Action { pipe, .. } => write!(f, "{{{{{pipe}}}}}"),
            Node::If(b) => write_branch(f, "if", b),
            Node::Range(b) => write_branch(f, "range", b),
            Node::With(b) => write_branch(f, "with", b),
            Node::Template { name, pipe, .. } => {
                write!(f, "{{{{template {}", crate::gofmt::quote(name))?;
                if let Some(p) = pipe {
                    write!(f, " {p}")?;
                }
                f.write_str("}}")
            }
            Node::Break { .. } => f.write_str("{{break}}"),
            Node::Continue { .. } => f.write_str("{{continue}}"),
        }
    }
}

fn write_branch(f: &mut fmt::Formatter<'_>, name: &str, b: &BranchNode) -> fmt::Result {
    write!(f, "{{{{{name} {}}}}}{}", b.pipe, b.list)?;
    if let Some(e) = &b.else_list {
        write!(f, "{{{{else}}}}{e}")?;
    }
    f.write_str("{{end}}")
}

/// A parsed template tree.
#[derive(Debug)]
pub struct Tree {
    pub root: ListNode,
}

impl Tree {
    /// The byte offset of the first node that names the field `name` (in a field, chain or
    /// variable reference, at any depth), if any.
    pub fn field_use(&self, name: &str) -> Option<usize> {
        let mut found = None;
        list_field_use(&self.root, name, &mut found);
        found
    }
}

fn note(found: &mut Option<usize>, pos: usize) {
    *found = Some(found.map_or(pos, |f| f.min(pos)));
}

fn list_field_use(list: &ListNode, name: &str, found: &mut Option<usize>) {
    for node in &list.nodes {
        match node {
            Node::Text { .. } | Node::Break { .. } | Node::Continue { .. } => {}
            Node::Action { pipe, .. } => pipe_field_use(pipe, name, found),
            Node::Template { pipe, .. } => {
                if let Some(p) = pipe {
                    pipe_field_use(p, name, found);
                }
            }
            Node::If(b) | Node::Range(b) | Node::With(b) => {
                pipe_field_use(&b.pipe, name, found);
                list_field_use(&b.list, name, found);
                if let Some(e) = &b.else_list {
                    list_field_use(e, name, found);
                }
            }
        }
    }
}

fn pipe_field_use(pipe: &PipeNode, name: &str, found: &mut Option<usize>) {
    for cmd in &pipe.cmds {
        for arg in &cmd.args {
            arg_field_use(arg, name, found);
        }
    }
}

/// Where `.name` starts in a run of fields `idents` whose node sits at `pos`: a node of several
/// fields has the position of its second (Go's chain position: `.Files` of `.Updated.Files`), and
/// the fields follow each other without spaces.
fn field_start(pos: usize, idents: &[String], skip: usize, name: &str) -> Option<usize> {
    let k = idents.iter().skip(skip).position(|i| i == name)? + skip;
    Some(match k {
        _ if idents.len() == 1 => pos,
        0 => pos.saturating_sub(1 + idents[0].len()),
        k => pos + idents[1..k].iter().map(|i| 1 + i.len()).sum::<usize>(),
    })
}

fn arg_field_use(arg: &Arg, name: &str, found: &mut Option<usize>) {
    match arg {
        Arg::Field { pos, ident } => {
            if let Some(p) = field_start(*pos, ident, 0, name) {
                note(found, p);
            }
        }
        Arg::Variable(v) => {
            if let Some(p) = field_start(v.pos, &v.ident, 1, name) {
                note(found, p);
            }
        }
        Arg::Chain { pos, node, fields } => {
            if fields.iter().any(|f| f == name) {
                note(found, *pos);
            }
            arg_field_use(node, name, found);
        }
        Arg::Pipe(p) => pipe_field_use(p, name, found),
        _ => {}
    }
}

fn is_empty_list(l: &ListNode) -> bool {
    l.nodes.iter().all(|n| match n {
        Node::Text { text, .. } => text
            .trim_matches(|c: char| c.is_ascii_whitespace() || c == '\u{0B}')
            .is_empty(),
        _ => false,
    })
}

/// End of a list: `{{end}}` or `{{else}}`.
enum Ender {
    End,
    Else { pos: usize },
}

enum Parsed {
    Node(Node),
    Ender(Ender),
}

struct TreeState {
    token: [Item; 3],
    peek_count: usize,
    vars: Vec<String>,
    range_depth: usize,
    action_line: usize,
}

fn zero_item() -> Item {
    Item {
        typ: ItemType::Error,
        pos: 0,
        val: String::new(),
        line: 0,
    }
}

impl TreeState {
    fn new() -> TreeState {
        TreeState {
            token: [zero_item(), zero_item(), zero_item()],
            peek_count: 0,
            vars: vec!["$".to_owned()],
            range_depth: 0,
            action_line: 0,
        }
    }
}

struct Parser<'f> {
    items: Vec<Item>,
    idx: usize,
    parse_name: String,
    st: TreeState,
    trees: HashMap<String, Tree>,
    has_function: &'f dyn Fn(&str) -> bool,
    depth: usize,
}

type PResult<T> = Result<T, ParseError>;

/// Parse `text` as the template `name`; returns every tree it defines (the top-level one under `name`).
pub fn parse(
    name: &str,
    text: &str,
    has_function: &dyn Fn(&str) -> bool,
) -> PResult<HashMap<String, Tree>> {
    let mut p = Parser {
        items: lex(text),
        idx: 0,
        parse_name: name.to_owned(),
        st: TreeState::new(),
        trees: HashMap::new(),
        has_function,
        depth: 0,
    };
    let root = p.parse_top()?;
    p.add(name.to_owned(), root)?;
    Ok(p.trees)
}

impl Parser<'_> {
    fn lex_next(&mut self) -> Item {
        match self.items.get(self.idx) {
            Some(it) => {
                self.idx += 1;
                it.clone()
            }
            None => zero_item(),
        }
    }

    fn next(&mut self) -> Item {
        if self.st.peek_count > 0 {
            self.st.peek_count -= 1;
        } else {
            self.st.token[0] = self.lex_next();
        }
        self.st.token[self.st.peek_count].clone()
    }

    fn backup(&mut self) {
        self.st.peek_count += 1;
    }

    fn backup2(&mut self, t1: Item) {
        self.st.token[1] = t1;
        self.st.peek_count = 2;
    }

    fn backup3(&mut self, t2: Item, t1: Item) {
        self.st.token[1] = t1;
        self.st.token[2] = t2;
        self.st.peek_count = 3;
    }

    fn peek(&mut self) -> Item {
        if self.st.peek_count > 0 {
            return self.st.token[self.st.peek_count - 1].clone();
        }
        self.st.peek_count = 1;
        self.st.token[0] = self.lex_next();
        self.st.token[0].clone()
    }

    fn next_non_space(&mut self) -> Item {
        loop {
            let t = self.next();
            if t.typ != ItemType::Space {
                return t;
            }
        }
    }

    fn peek_non_space(&mut self) -> Item {
        let t = self.next_non_space();
        self.backup();
        t
    }

    fn errorf<T>(&self, msg: String) -> PResult<T> {
        Err(ParseError {
            message: format!(
                "template: {}:{}: {}",
                self.parse_name, self.st.token[0].line, msg
            ),
        })
    }

    fn expect(&mut self, expected: ItemType, context: &str) -> PResult<Item> {
        let t = self.next_non_space();
        if t.typ != expected {
            return self.unexpected(&t, context);
        }
        Ok(t)
    }

    fn unexpected<T>(&self, token: &Item, context: &str) -> PResult<T> {
        if token.typ == ItemType::Error {
            let mut extra = String::new();
            if self.st.action_line != 0 && self.st.action_line != token.line {
                extra = format!(
                    " in action started at {}:{}",
                    self.parse_name, self.st.action_line
                );
                if token.val.ends_with(" action") {
                    extra = extra[" in action".len()..].to_owned();
                }
            }
            return self.errorf(format!("{token}{extra}"));
        }
        self.errorf(format!("unexpected {token} in {context}"))
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return self.errorf(format!("exceeded maximum nesting depth ({MAX_NESTING})"));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    fn add(&mut self, name: String, root: ListNode) -> PResult<()> {
        match self.trees.get(&name) {
            Some(existing) if !is_empty_list(&existing.root) => {
                if !is_empty_list(&root) {
                    return self.errorf(format!(
                        "template: multiple definition of template {}",
                        crate::gofmt::quote(&name)
                    ));
                }
                Ok(())
            }
            _ => {
                self.trees.insert(name, Tree { root });
                Ok(())
            }
        }
    }

    fn parse_top(&mut self) -> PResult<ListNode> {
        let pos = self.peek().pos;
        let mut root = ListNode {
            pos,
            nodes: Vec::new(),
        };
        while self.peek().typ != ItemType::Eof {
            if self.peek().typ == ItemType::LeftDelim {
                let delim = self.next();
                if self.next_non_space().typ == ItemType::Define {
                    let saved = std::mem::replace(&mut self.st, TreeState::new());
                    let r = self.parse_definition();
                    self.st = saved;
                    r?;
                    continue;
                }
                self.backup2(delim);
            }
            match self.text_or_action()? {
                Parsed::Ender(Ender::End) => return self.errorf("unexpected {{end}}".to_owned()),
                Parsed::Ender(Ender::Else { .. }) => {
                    return self.errorf("unexpected {{else}}".to_owned());
                }
                Parsed::Node(n) => root.nodes.push(n),
            }
        }
        Ok(root)
    }

    fn parse_definition(&mut self) -> PResult<()> {
        let context = "define clause";
        let name = self.next_non_space();
        if name.typ != ItemType::String && name.typ != ItemType::RawString {
            return self.unexpected(&name, context);
        }
        let Some(tname) = unquote(&name.val) else {
            return self.errorf("invalid syntax".to_owned());
        };
        self.expect(ItemType::RightDelim, context)?;
        let (list, end) = self.item_list()?;
        if let Ender::Else { .. } = end {
            return self.errorf(format!("unexpected {{{{else}}}} in {context}"));
        }
        self.add(tname, list)
    }

    fn item_list(&mut self) -> PResult<(ListNode, Ender)> {
        let pos = self.peek_non_space().pos;
        let mut list = ListNode {
            pos,
            nodes: Vec::new(),
        };
        while self.peek_non_space().typ != ItemType::Eof {
            match self.text_or_action()? {
                Parsed::Ender(e) => return Ok((list, e)),
                Parsed::Node(n) => list.nodes.push(n),
            }
        }
        self.errorf("unexpected EOF".to_owned())
    }

    fn text_or_action(&mut self) -> PResult<Parsed> {
        let token = self.next_non_space();
        match token.typ {
            ItemType::Text => Ok(Parsed::Node(Node::Text {
                pos: token.pos,
                text: Rc::from(token.val.as_str()),
            })),
            ItemType::LeftDelim => {
                self.st.action_line = token.line;
                let r = self.action();
                self.st.action_line = 0;
                r
            }
            _ => self.unexpected(&token, "input"),
        }
    }

    fn action(&mut self) -> PResult<Parsed> {
        let token = self.next_non_space();
        match token.typ {
            ItemType::Block => return self.block_control().map(Parsed::Node),
            ItemType::Break => return self.break_control(token.pos, "{{break}}", true),
            ItemType::Continue => return self.break_control(token.pos, "{{continue}}", false),
            ItemType::Else => return self.else_control(),
            ItemType::End => {
                self.expect(ItemType::RightDelim, "end")?;
                return Ok(Parsed::Ender(Ender::End));
            }
            ItemType::If => return self.control("if").map(Parsed::Node),
            ItemType::Range => return self.control("range").map(Parsed::Node),
            ItemType::Template => return self.template_control().map(Parsed::Node),
            ItemType::With => return self.control("with").map(Parsed::Node),
            _ => {}
        }
        self.backup();
        let token = self.peek();
        let pipe = self.pipeline("command", ItemType::RightDelim)?;
        Ok(Parsed::Node(Node::Action {
            pos: token.pos,
            pipe,
        }))
    }

    fn break_control(&mut self, pos: usize, context: &str, is_break: bool) -> PResult<Parsed> {
        let token = self.next_non_space();
        if token.typ != ItemType::RightDelim {
            return self.unexpected(&token, context);
        }
        if self.st.range_depth == 0 {
            return self.errorf(format!("{context} outside {{{{range}}}}"));
        }
        Ok(Parsed::Node(if is_break {
            Node::Break { pos }
        } else {
            Node::Continue { pos }
        }))
    }

    fn pipeline(&mut self, context: &str, end: ItemType) -> PResult<PipeNode> {
        let token = self.peek_non_space();
        let mut pipe = PipeNode {
            pos: token.pos,
            is_assign: false,
            decl: Vec::new(),
            cmds: Vec::new(),
        };
        'decls: loop {
            let v = self.peek_non_space();
            if v.typ == ItemType::Variable {
                self.next();
                let token_after = self.peek();
                let next = self.peek_non_space();
                if next.typ == ItemType::Assign || next.typ == ItemType::Declare {
                    pipe.is_assign = next.typ == ItemType::Assign;
                    self.next_non_space();
                    pipe.decl.push(VariableNode {
                        pos: v.pos,
                        ident: split_ident(&v.val),
                    });
                    self.st.vars.push(v.val.clone());
                } else if next.typ == ItemType::Char && next.val == "," {
                    self.next_non_space();
                    pipe.decl.push(VariableNode {
                        pos: v.pos,
                        ident: split_ident(&v.val),
                    });
                    self.st.vars.push(v.val.clone());
                    if context == "range" && pipe.decl.len() < 2 {
                        match self.peek_non_space().typ {
                            ItemType::Variable | ItemType::RightDelim | ItemType::RightParen => {
                                continue 'decls;
                            }
                            _ => {
                                return self
                                    .errorf("range can only initialize variables".to_owned());
                            }
                        }
                    }
                    return self.errorf(format!("too many declarations in {context}"));
                } else if token_after.typ == ItemType::Space {
                    self.backup3(v, token_after);
                } else {
                    self.backup2(v);
                }
            }
            break;
        }
        loop {
            let token = self.next_non_space();
            match token.typ {
                t if t == end => {
                    self.check_pipeline(&pipe, context)?;
                    return Ok(pipe);
                }
                ItemType::Bool
                | ItemType::CharConstant
                | ItemType::Complex
                | ItemType::Dot
                | ItemType::Field
                | ItemType::Identifier
                | ItemType::Number
                | ItemType::Nil
                | ItemType::RawString
                | ItemType::String
                | ItemType::Variable
                | ItemType::LeftParen => {
                    self.backup();
                    let cmd = self.command()?;
                    pipe.cmds.push(cmd);
                }
                _ => return self.unexpected(&token, context),
            }
        }
    }

    fn check_pipeline(&self, pipe: &PipeNode, context: &str) -> PResult<()> {
        if pipe.cmds.is_empty() {
            return self.errorf(format!("missing value for {context}"));
        }
        for (i, c) in pipe.cmds.iter().enumerate().skip(1) {
            if matches!(
                c.args.first(),
                Some(
                    Arg::Bool { .. }
                        | Arg::Dot { .. }
                        | Arg::Nil { .. }
                        | Arg::Number(_)
                        | Arg::String { .. }
                )
            ) {
                return self.errorf(format!(
                    "non executable command in pipeline stage {}",
                    i + 1
                ));
            }
        }
        Ok(())
    }

    fn control(&mut self, context: &str) -> PResult<Node> {
        self.enter()?;
        let r = self.control_inner(context);
        self.leave();
        r
    }

    fn control_inner(&mut self, context: &str) -> PResult<Node> {
        let mark = self.st.vars.len();
        let r = self.parse_control(context);
        self.st.vars.truncate(mark);
        let b = r?;
        Ok(match context {
            "if" => Node::If(Box::new(b)),
            "range" => Node::Range(Box::new(b)),
            _ => Node::With(Box::new(b)),
        })
    }

    fn parse_control(&mut self, context: &str) -> PResult<BranchNode> {
        let pipe = self.pipeline(context, ItemType::RightDelim)?;
        if context == "range" {
            self.st.range_depth += 1;
        }
        let r = self.item_list();
        if context == "range" {
            self.st.range_depth -= 1;
        }
        let (list, next) = r?;
        let mut else_list = None;
        if let Ender::Else { pos } = next {
            let peek = self.peek().typ;
            if context == "if" && peek == ItemType::If {
                self.next();
                let n = self.control("if")?;
                else_list = Some(ListNode {
                    pos,
                    nodes: vec![n],
                });
            } else if context == "with" && peek == ItemType::With {
                self.next();
                let n = self.control("with")?;
                else_list = Some(ListNode {
                    pos,
                    nodes: vec![n],
                });
            } else {
                let (l, next) = self.item_list()?;
                if let Ender::Else { .. } = next {
                    return self.errorf("expected end; found {{else}}".to_owned());
                }
                else_list = Some(l);
            }
        }
        Ok(BranchNode {
            pos: pipe.pos,
            pipe,
            list,
            else_list,
        })
    }

    fn else_control(&mut self) -> PResult<Parsed> {
        let peek = self.peek_non_space();
        if peek.typ == ItemType::If || peek.typ == ItemType::With {
            return Ok(Parsed::Ender(Ender::Else { pos: peek.pos }));
        }
        let token = self.expect(ItemType::RightDelim, "else")?;
        Ok(Parsed::Ender(Ender::Else { pos: token.pos }))
    }

    fn block_control(&mut self) -> PResult<Node> {
        let context = "block clause";
        let token = self.next_non_space();
        let name = self.parse_template_name(&token, context)?;
        let pipe = self.pipeline(context, ItemType::RightDelim)?;
        self.enter()?;
        let saved = std::mem::replace(&mut self.st, TreeState::new());
        let r = self.item_list();
        let block_state = std::mem::replace(&mut self.st, saved);
        self.leave();
        let (list, end) = r?;
        drop(block_state);
        if let Ender::Else { .. } = end {
            return self.errorf(format!("unexpected {{{{else}}}} in {context}"));
        }
        self.add(name.clone(), list)?;
        Ok(Node::Template {
            pos: token.pos,
            name,
            pipe: Some(pipe),
        })
    }

    fn template_control(&mut self) -> PResult<Node> {
        let context = "template clause";
        let token = self.next_non_space();
        let name = self.parse_template_name(&token, context)?;
        let mut pipe = None;
        if self.next_non_space().typ != ItemType::RightDelim {
            self.backup();
            pipe = Some(self.pipeline(context, ItemType::RightDelim)?);
        }
        Ok(Node::Template {
            pos: token.pos,
            name,
            pipe,
        })
    }

    fn parse_template_name(&self, token: &Item, context: &str) -> PResult<String> {
        match token.typ {
            ItemType::String | ItemType::RawString => match unquote(&token.val) {
                Some(s) => Ok(s),
                None => self.errorf("invalid syntax".to_owned()),
            },
            _ => self.unexpected(token, context),
        }
    }

    fn command(&mut self) -> PResult<CommandNode> {
        let pos = self.peek_non_space().pos;
        let mut cmd = CommandNode {
            pos,
            args: Vec::new(),
        };
        loop {
            self.peek_non_space();
            if let Some(op) = self.operand()? {
                cmd.args.push(op);
            }
            let token = self.next();
            match token.typ {
                ItemType::Space => continue,
                ItemType::RightDelim | ItemType::RightParen => self.backup(),
                ItemType::Pipe => {}
                _ => return self.unexpected(&token, "operand"),
            }
            break;
        }
        if cmd.args.is_empty() {
            return self.errorf("empty command".to_owned());
        }
        Ok(cmd)
    }

    fn operand(&mut self) -> PResult<Option<Arg>> {
        let Some(node) = self.term()? else {
            return Ok(None);
        };
        if self.peek().typ == ItemType::Field {
            let chain_pos = self.peek().pos;
            let mut fields = Vec::new();
            while self.peek().typ == ItemType::Field {
                let f = self.next().val;
                fields.push(f[1..].to_owned());
            }
            return Ok(Some(match node {
                Arg::Field { mut ident, .. } => {
                    ident.extend(fields);
                    Arg::Field {
                        pos: chain_pos,
                        ident,
                    }
                }
                Arg::Variable(mut v) => {
                    v.ident.extend(fields);
                    Arg::Variable(VariableNode {
                        pos: chain_pos,
                        ident: v.ident,
                    })
                }
                Arg::Bool { .. }
                | Arg::String { .. }
                | Arg::Number(_)
                | Arg::Nil { .. }
                | Arg::Dot { .. } => {
                    return self.errorf(format!(
                        "unexpected . after term {}",
                        crate::gofmt::quote(&node.to_string())
                    ));
                }
                other => Arg::Chain {
                    pos: chain_pos,
                    node: Box::new(other),
                    fields,
                },
            }));
        }
        Ok(Some(node))
    }

    fn term(&mut self) -> PResult<Option<Arg>> {
        let token = self.next_non_space();
        let pos = token.pos;
        Ok(Some(match token.typ {
            ItemType::Identifier => {
                if !(self.has_function)(&token.val) {
                    return self.errorf(format!(
                        "function {} not defined",
                        crate::gofmt::quote(&token.val)
                    ));
                }
                Arg::Identifier {
                    pos,
                    name: token.val,
                }
            }
            ItemType::Dot => Arg::Dot { pos },
            ItemType::Nil => Arg::Nil { pos },
            ItemType::Variable => {
                let ident = split_ident(&token.val);
                if !self.st.vars.iter().any(|v| *v == ident[0]) {
                    return self.errorf(format!(
                        "undefined variable {}",
                        crate::gofmt::quote(&ident[0])
                    ));
                }
                Arg::Variable(VariableNode { pos, ident })
            }
            ItemType::Field => Arg::Field {
                pos,
                ident: token.val[1..].split('.').map(str::to_owned).collect(),
            },
            ItemType::Bool => Arg::Bool {
                pos,
                val: token.val == "true",
            },
            ItemType::CharConstant | ItemType::Complex | ItemType::Number => {
                match new_number(pos, &token.val, token.typ) {
                    Ok(n) => Arg::Number(n),
                    Err(msg) => return self.errorf(msg),
                }
            }
            ItemType::LeftParen => {
                self.enter()?;
                let p = self.pipeline("parenthesized pipeline", ItemType::RightParen);
                self.leave();
                Arg::Pipe(Box::new(p?))
            }
            ItemType::String | ItemType::RawString => match unquote(&token.val) {
                Some(s) => Arg::String {
                    pos,
                    quoted: token.val.clone(),
                    text: Rc::from(s.as_str()),
                },
                None => return self.errorf("invalid syntax".to_owned()),
            },
            _ => {
                self.backup();
                return Ok(None);
            }
        }))
    }
}

fn split_ident(s: &str) -> Vec<String> {
    s.split('.').map(str::to_owned).collect()
}

/// `strconv.Unquote` for the literals the lexer accepts. Escapes that would produce invalid UTF-8
/// (`"\xff"`) become U+FFFD.
pub fn unquote(s: &str) -> Option<String> {
    let b = s.as_bytes();
    if b.len() < 2 {
        return None;
    }
    let q = b[0];
    if b[b.len() - 1] != q {
        return None;
    }
    let body = &s[1..s.len() - 1];
    match q {
        b'`' => {
            if body.contains('`') {
                return None;
            }
            Some(body.replace('\r', ""))
        }
        b'"' | b'\'' => {
            let mut out: Vec<u8> = Vec::new();
            let mut rest = body;
            let mut count = 0;
            while !rest.is_empty() {
                let (bytes, tail) = unquote_char(rest, q)?;
                out.extend_from_slice(&bytes);
                rest = tail;
                count += 1;
            }
            if q == b'\'' && count != 1 {
                return None;
            }
            Some(String::from_utf8_lossy(&out).into_owned())
        }
        _ => None,
    }
}

/// One (possibly escaped) character of a quoted literal: its bytes and the rest.
pub fn unquote_char(s: &str, quote: u8) -> Option<(Vec<u8>, &str)> {
    let c = s.chars().next()?;
    if c as u32 == u32::from(quote) && (quote == b'\'' || quote == b'"') {
        return None;
    }
    if c != '\\' {
        if c == '\n' && quote != b'`' {
            return None;
        }
        let mut buf = [0u8; 4];
        return Some((
            c.encode_utf8(&mut buf).as_bytes().to_vec(),
            &s[c.len_utf8()..],
        ));
    }
    let rest = &s[1..];
    let e = rest.chars().next()?;
    let after = &rest[e.len_utf8()..];
    let simple = |b: u8| Some((vec![b], after));
    match e {
        'a' => simple(7),
        'b' => simple(8),
        'f' => simple(12),
        'n' => simple(b'\n'),
        'r' => simple(b'\r'),
        't' => simple(b'\t'),
        'v' => simple(11),
        '\\' => simple(b'\\'),
        '\'' | '"' => {
            if e as u32 != u32::from(quote) {
                return None;
            }
            simple(e as u8)
        }
        'x' | 'u' | 'U' => {
            let n = match e {
                'x' => 2,
                'u' => 4,
                _ => 8,
            };
            if after.len() < n || !after.is_char_boundary(n) {
                return None;
            }
            let v = u32::from_str_radix(&after[..n], 16).ok()?;
            if !after[..n].bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            if e == 'x' {
                if quote == b'\'' {
                    let c = char::from_u32(v)?;
                    let mut buf = [0u8; 4];
                    return Some((c.encode_utf8(&mut buf).as_bytes().to_vec(), &after[n..]));
                }
                return Some((vec![v as u8], &after[n..]));
            }
            let c = char::from_u32(v)?;
            let mut buf = [0u8; 4];
            Some((c.encode_utf8(&mut buf).as_bytes().to_vec(), &after[n..]))
        }
        '0'..='7' => {
            // `get` rather than indexing: the three bytes may end inside a multi-byte character.
            let digits = rest.get(..3)?;
            if !digits.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
                return None;
            }
            let v = u32::from_str_radix(digits, 8).ok()?;
            if v > 255 {
                return None;
            }
            Some((vec![v as u8], &rest[3..]))
        }
        _ => None,
    }
}

/// Go's `underscoreOK`: underscores only between digits or after a base prefix.
fn underscore_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let mut saw = b'^';
    let mut i = 0;
    if !b.is_empty() && (b[0] == b'-' || b[0] == b'+') {
        i = 1;
    }
    let mut hex = false;
    if b.len() - i >= 2 && b[i] == b'0' {
        let c = b[i + 1] | 0x20;
        if c == b'b' || c == b'o' || c == b'x' {
            hex = c == b'x';
            i += 2;
            saw = b'0';
        }
    }
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

/// `strconv.ParseUint(s, 0, 64)`.
fn parse_uint0(s: &str) -> Option<u64> {
    if s.is_empty() || s.starts_with(['+', '-']) {
        return None;
    }
    let (base, digits, prefixed) =
        if let Some(r) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            (16, r, true)
        } else if let Some(r) = s.strip_prefix("0o").or_else(|| s.strip_prefix("0O")) {
            (8, r, true)
        } else if let Some(r) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
            (2, r, true)
        } else if s.len() > 1 && s.starts_with('0') {
            (8, &s[1..], true)
        } else {
            (10, s, false)
        };
    let _ = prefixed;
    if s.contains('_') && !underscore_ok(s) {
        return None;
    }
    let clean: String = digits.chars().filter(|c| *c != '_').collect();
    if clean.is_empty() {
        return None;
    }
    u64::from_str_radix(&clean, base).ok()
}

/// `strconv.ParseInt(s, 0, 64)`.
pub fn parse_int0(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let u = parse_uint0(body)?;
    if neg {
        if u > 1u64 << 63 {
            return None;
        }
        Some((u as i64).wrapping_neg())
    } else {
        i64::try_from(u).ok()
    }
}

/// `strconv.ParseFloat(s, 64)` for Go literal syntax (decimal and hexadecimal, underscores).
pub fn parse_float(s: &str) -> Option<f64> {
    if s.contains('_') && !underscore_ok(s) {
        return None;
    }
    let clean: String = s.chars().filter(|c| *c != '_').collect();
    let (neg, body) = match clean.as_bytes().first() {
        Some(b'-') => (true, &clean[1..]),
        Some(b'+') => (false, &clean[1..]),
        _ => (false, clean.as_str()),
    };
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        let (mant, exp) = match h.find(['p', 'P']) {
            Some(i) => (&h[..i], h[i + 1..].parse::<i32>().ok()?),
            None => return None,
        };
        let (ip, fp) = mant.split_once('.').unwrap_or((mant, ""));
        if ip.is_empty() && fp.is_empty() {
            return None;
        }
        let mut m = 0f64;
        for c in ip.chars().chain(fp.chars()) {
            m = m * 16.0 + f64::from(c.to_digit(16)?);
        }
        m * 2f64.powi(exp - 4 * fp.len() as i32)
    } else {
        if body.is_empty()
            || !body
                .bytes()
                .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        {
            return None;
        }
        body.parse::<f64>().ok()?
    };
    Some(if neg { -v } else { v })
}

/// Go's `newNumber`.
pub fn new_number(pos: usize, text: &str, typ: ItemType) -> Result<NumberNode, String> {
    let mut n = NumberNode {
        pos,
        is_int: false,
        is_uint: false,
        is_float: false,
        is_complex: false,
        int64: 0,
        uint64: 0,
        float64: 0.0,
        complex: (0.0, 0.0),
        text: text.to_owned(),
    };
    match typ {
        ItemType::CharConstant => {
            let inner = &text[1..];
            let (bytes, tail) =
                unquote_char(inner, b'\'').ok_or_else(|| "invalid syntax".to_owned())?;
            if tail != "'" {
                return Err(format!("malformed character constant: {text}"));
            }
            let c = String::from_utf8_lossy(&bytes)
                .chars()
                .next()
                .map_or(0xFFFD, |c| c as u32);
            let c = if bytes.len() == 1 {
                u32::from(bytes[0])
            } else {
                c
            };
            n.int64 = i64::from(c);
            n.is_int = true;
            n.uint64 = u64::from(c);
            n.is_uint = true;
            n.float64 = f64::from(c);
            n.is_float = true;
            return Ok(n);
        }
        ItemType::Complex => {
            let body = &text[..text.len() - 1];
            let split = body
                .char_indices()
                .skip(1)
                .filter(|(i, c)| {
                    (*c == '+' || *c == '-')
                        && !matches!(body.as_bytes()[i - 1], b'e' | b'E' | b'p' | b'P')
                })
                .last();
            let Some((i, _)) = split else {
                return Err("expected integer".to_owned());
            };
            let re = parse_float(&body[..i]).ok_or_else(|| "expected integer".to_owned())?;
            let im = parse_float(&body[i..]).ok_or_else(|| "expected integer".to_owned())?;
            n.is_complex = true;
            n.complex = (re, im);
            simplify_complex(&mut n);
            return Ok(n);
        }
        _ => {}
    }
    if let Some(body) = text.strip_suffix('i')
        && let Some(f) = parse_float(body)
    {
        n.is_complex = true;
        n.complex = (0.0, f);
        simplify_complex(&mut n);
        return Ok(n);
    }
    let u = parse_uint0(text);
    if let Some(u) = u {
        n.is_uint = true;
        n.uint64 = u;
    }
    if let Some(i) = parse_int0(text) {
        n.is_int = true;
        n.int64 = i;
        if i == 0 {
            n.is_uint = true;
            n.uint64 = u.unwrap_or(0);
        }
    }
    if n.is_int {
        n.is_float = true;
        n.float64 = n.int64 as f64;
    } else if n.is_uint {
        n.is_float = true;
        n.float64 = n.uint64 as f64;
    } else if let Some(f) = parse_float(text) {
        if !text.contains(['.', 'e', 'E', 'p', 'P']) {
            return Err(format!("integer overflow: {}", crate::gofmt::quote(text)));
        }
        n.is_float = true;
        n.float64 = f;
        if f.fract() == 0.0 && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
            n.is_int = true;
            n.int64 = f as i64;
        }
        if f.fract() == 0.0 && (0.0..1.844_674_407_370_955_2e19).contains(&f) {
            n.is_uint = true;
            n.uint64 = f as u64;
        }
    }
    if !n.is_int && !n.is_uint && !n.is_float {
        return Err(format!(
            "illegal number syntax: {}",
            crate::gofmt::quote(text)
        ));
    }
    Ok(n)
}

fn simplify_complex(n: &mut NumberNode) {
    let (re, im) = n.complex;
    if im == 0.0 {
        n.is_float = true;
        n.float64 = re;
        if re.fract() == 0.0 && re.abs() < 9.2e18 {
            n.is_int = true;
            n.int64 = re as i64;
        }
        if re.fract() == 0.0 && (0.0..1.8e19).contains(&re) {
            n.is_uint = true;
            n.uint64 = re as u64;
        }
    }
}
