//! The lexer: template text into items, with Go's rules for delimiters, `{{-`/`-}}` trimming, comments,
//! quoting and numbers, and Go's line counting (error messages name lines the way Go does).

use crate::unicode::{is_digit, is_letter, is_print};

/// Item kinds, in Go's order (keywords after `Keyword`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ItemType {
    Error,
    Bool,
    Char,
    CharConstant,
    Complex,
    Assign,
    Declare,
    Eof,
    Field,
    Identifier,
    LeftDelim,
    LeftParen,
    Number,
    Pipe,
    RawString,
    RightDelim,
    RightParen,
    Space,
    String,
    Text,
    Variable,
    Keyword,
    Block,
    Break,
    Continue,
    Dot,
    Define,
    Else,
    End,
    If,
    Nil,
    Range,
    Template,
    With,
}

/// One lexed item.
#[derive(Clone, Debug)]
pub struct Item {
    pub typ: ItemType,
    pub pos: usize,
    pub val: String,
    pub line: usize,
}

impl std::fmt::Display for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.typ {
            ItemType::Eof => f.write_str("EOF"),
            ItemType::Error => f.write_str(&self.val),
            t if t > ItemType::Keyword => write!(f, "<{}>", self.val),
            _ => {
                if self.val.chars().count() > 10 {
                    let head: String = self.val.chars().take(10).collect();
                    write!(f, "{}...", crate::gofmt::quote(&head))
                } else {
                    f.write_str(&crate::gofmt::quote(&self.val))
                }
            }
        }
    }
}

fn keyword(word: &str) -> Option<ItemType> {
    Some(match word {
        "." => ItemType::Dot,
        "block" => ItemType::Block,
        "break" => ItemType::Break,
        "continue" => ItemType::Continue,
        "define" => ItemType::Define,
        "else" => ItemType::Else,
        "end" => ItemType::End,
        "if" => ItemType::If,
        "range" => ItemType::Range,
        "nil" => ItemType::Nil,
        "template" => ItemType::Template,
        "with" => ItemType::With,
        _ => return None,
    })
}

const LEFT: &str = "{{";
const RIGHT: &str = "}}";
const LEFT_COMMENT: &str = "/*";
const RIGHT_COMMENT: &str = "*/";

fn is_space(c: Option<char>) -> bool {
    matches!(c, Some(' ' | '\t' | '\r' | '\n'))
}

fn is_alnum(c: Option<char>) -> bool {
    match c {
        Some(c) => c == '_' || is_letter(c) || is_digit(c),
        None => false,
    }
}

fn has_left_trim(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0] == b'-' && matches!(b[1], b' ' | b'\t' | b'\r' | b'\n')
}

fn has_right_trim(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && matches!(b[0], b' ' | b'\t' | b'\r' | b'\n') && b[1] == b'-'
}

/// `%#U` of a rune.
pub fn sharp_u(c: char) -> String {
    if is_print(c) {
        format!("U+{:04X} '{}'", c as u32, c)
    } else {
        format!("U+{:04X}", c as u32)
    }
}

struct Lexer<'a> {
    input: &'a str,
    pos: usize,
    start: usize,
    at_eof: bool,
    items: Vec<Item>,
    paren_depth: i64,
    line: usize,
    start_line: usize,
}

enum State {
    Text,
    LeftDelim,
    Comment,
    RightDelim,
    InsideAction,
    Space,
    Identifier,
    Field,
    Variable,
    Char,
    Number,
    Quote,
    RawQuote,
}

/// Lex the whole input. Lexing stops at the first error, which is the last item.
pub fn lex(input: &str) -> Vec<Item> {
    let mut l = Lexer {
        input,
        pos: 0,
        start: 0,
        at_eof: false,
        items: Vec::new(),
        paren_depth: 0,
        line: 1,
        start_line: 1,
    };
    let mut state = Some(State::Text);
    while let Some(s) = state {
        state = l.step(s);
    }
    l.items
}

impl Lexer<'_> {
    fn next(&mut self) -> Option<char> {
        if self.pos >= self.input.len() {
            self.at_eof = true;
            return None;
        }
        let c = self.input[self.pos..].chars().next()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn peek(&mut self) -> Option<char> {
        let c = self.next();
        self.backup();
        c
    }

    fn backup(&mut self) {
        if !self.at_eof
            && self.pos > 0
            && let Some(c) = self.input[..self.pos].chars().next_back()
        {
            self.pos -= c.len_utf8();
            if c == '\n' {
                self.line -= 1;
            }
        }
    }

    fn emit(&mut self, typ: ItemType) {
        self.items.push(Item {
            typ,
            pos: self.start,
            val: self.input[self.start..self.pos].to_owned(),
            line: self.start_line,
        });
        self.start = self.pos;
        self.start_line = self.line;
    }

    fn ignore(&mut self) {
        self.line += self.input[self.start..self.pos].matches('\n').count();
        self.start = self.pos;
        self.start_line = self.line;
    }

    fn accept(&mut self, valid: &str) -> bool {
        match self.next() {
            Some(c) if valid.contains(c) => true,
            _ => {
                self.backup();
                false
            }
        }
    }

    fn accept_run(&mut self, valid: &str) {
        while let Some(c) = self.next() {
            if !valid.contains(c) {
                break;
            }
        }
        self.backup();
    }

    fn errorf(&mut self, msg: String) -> Option<State> {
        self.items.push(Item {
            typ: ItemType::Error,
            pos: self.start,
            val: msg,
            line: self.start_line,
        });
        None
    }

    fn at_right_delim(&self) -> (bool, bool) {
        let rest = &self.input[self.pos..];
        if has_right_trim(rest) && rest[2..].starts_with(RIGHT) {
            return (true, true);
        }
        if rest.starts_with(RIGHT) {
            return (true, false);
        }
        (false, false)
    }

    fn at_terminator(&mut self) -> bool {
        let r = self.peek();
        if is_space(r) {
            return true;
        }
        match r {
            None | Some('.' | ',' | '|' | ':' | ')' | '(') => true,
            _ => self.input[self.pos..].starts_with(RIGHT),
        }
    }

    fn step(&mut self, s: State) -> Option<State> {
        match s {
            State::Text => self.lex_text(),
            State::LeftDelim => self.lex_left_delim(),
            State::Comment => self.lex_comment(),
            State::RightDelim => self.lex_right_delim(),
            State::InsideAction => self.lex_inside_action(),
            State::Space => self.lex_space(),
            State::Identifier => self.lex_identifier(),
            State::Field => self.lex_field_or_variable(ItemType::Field),
            State::Variable => {
                if self.at_terminator() {
                    self.emit(ItemType::Variable);
                    return Some(State::InsideAction);
                }
                self.lex_field_or_variable(ItemType::Variable)
            }
            State::Char => self.lex_char(),
            State::Number => self.lex_number(),
            State::Quote => self.lex_quote(),
            State::RawQuote => self.lex_raw_quote(),
        }
    }

    fn lex_text(&mut self) -> Option<State> {
        if let Some(x) = self.input[self.pos..].find(LEFT) {
            self.pos += x;
            let mut trim = 0;
            if has_left_trim(&self.input[self.pos + LEFT.len()..]) {
                let before = &self.input[self.start..self.pos];
                trim = before.len() - before.trim_end_matches([' ', '\t', '\r', '\n']).len();
            }
            self.pos -= trim;
            if self.pos > self.start {
                self.line += self.input[self.start..self.pos].matches('\n').count();
                self.emit(ItemType::Text);
            }
            self.pos += trim;
            self.ignore();
            return Some(State::LeftDelim);
        }
        self.pos = self.input.len();
        if self.pos > self.start {
            self.line += self.input[self.start..self.pos].matches('\n').count();
            self.emit(ItemType::Text);
        }
        self.emit(ItemType::Eof);
        None
    }

    fn lex_left_delim(&mut self) -> Option<State> {
        self.pos += LEFT.len();
        let trim = has_left_trim(&self.input[self.pos..]);
        let after = if trim { 2 } else { 0 };
        if self.input[self.pos + after..].starts_with(LEFT_COMMENT) {
            self.pos += after;
            self.ignore();
            return Some(State::Comment);
        }
        self.emit(ItemType::LeftDelim);
        self.pos += after;
        self.ignore();
        self.paren_depth = 0;
        Some(State::InsideAction)
    }

    fn lex_comment(&mut self) -> Option<State> {
        self.pos += LEFT_COMMENT.len();
        let Some(i) = self.input[self.pos..].find(RIGHT_COMMENT) else {
            return self.errorf("unclosed comment".to_owned());
        };
        self.pos += i + RIGHT_COMMENT.len();
        let (delim, trim) = self.at_right_delim();
        if !delim {
            return self.errorf("comment ends before closing delimiter".to_owned());
        }
        if trim {
            self.pos += 2;
        }
        self.pos += RIGHT.len();
        if trim {
            let rest = &self.input[self.pos..];
            self.pos += rest.len() - rest.trim_start_matches([' ', '\t', '\r', '\n']).len();
        }
        self.ignore();
        Some(State::Text)
    }

    fn lex_right_delim(&mut self) -> Option<State> {
        let trim = has_right_trim(&self.input[self.pos..]);
        if trim {
            self.pos += 2;
            self.ignore();
        }
        self.pos += RIGHT.len();
        self.emit(ItemType::RightDelim);
        if trim {
            let rest = &self.input[self.pos..];
            self.pos += rest.len() - rest.trim_start_matches([' ', '\t', '\r', '\n']).len();
            self.ignore();
        }
        Some(State::Text)
    }

    fn lex_inside_action(&mut self) -> Option<State> {
        let (delim, _) = self.at_right_delim();
        if delim {
            if self.paren_depth == 0 {
                return Some(State::RightDelim);
            }
            return self.errorf("unclosed left paren".to_owned());
        }
        let r = self.next();
        match r {
            None => return self.errorf("unclosed action".to_owned()),
            Some(c) if is_space(Some(c)) => {
                self.backup();
                return Some(State::Space);
            }
            Some('=') => self.emit(ItemType::Assign),
            Some(':') => {
                if self.next() != Some('=') {
                    return self.errorf("expected :=".to_owned());
                }
                self.emit(ItemType::Declare);
            }
            Some('|') => self.emit(ItemType::Pipe),
            Some('"') => return Some(State::Quote),
            Some('`') => return Some(State::RawQuote),
            Some('$') => return Some(State::Variable),
            Some('\'') => return Some(State::Char),
            Some('.') => {
                let b = self.input.as_bytes().get(self.pos).copied();
                match b {
                    Some(d) if d.is_ascii_digit() => {
                        self.backup();
                        return Some(State::Number);
                    }
                    _ => return Some(State::Field),
                }
            }
            Some(c) if c == '+' || c == '-' || c.is_ascii_digit() => {
                self.backup();
                return Some(State::Number);
            }
            Some(c) if is_alnum(Some(c)) => {
                self.backup();
                return Some(State::Identifier);
            }
            Some('(') => {
                self.emit(ItemType::LeftParen);
                self.paren_depth += 1;
            }
            Some(')') => {
                self.emit(ItemType::RightParen);
                self.paren_depth -= 1;
                if self.paren_depth < 0 {
                    return self.errorf(format!("unexpected right paren {}", sharp_u(')')));
                }
            }
            Some(c) if c.is_ascii() && is_print(c) => self.emit(ItemType::Char),
            Some(c) => {
                return self.errorf(format!("unrecognized character in action: {}", sharp_u(c)));
            }
        }
        Some(State::InsideAction)
    }

    fn lex_space(&mut self) -> Option<State> {
        let mut num = 0;
        while is_space(self.peek()) {
            self.next();
            num += 1;
        }
        let rest = &self.input[self.pos - 1..];
        if has_right_trim(rest) && rest[2..].starts_with(RIGHT) {
            self.backup();
            if num == 1 {
                return Some(State::RightDelim);
            }
        }
        self.emit(ItemType::Space);
        Some(State::InsideAction)
    }

    fn lex_identifier(&mut self) -> Option<State> {
        loop {
            let r = self.next();
            if is_alnum(r) {
                continue;
            }
            self.backup();
            let word = self.input[self.start..self.pos].to_owned();
            if !self.at_terminator() {
                return self.errorf(format!(
                    "bad character {}",
                    r.map(sharp_u).unwrap_or_default()
                ));
            }
            match keyword(&word) {
                Some(k) if k > ItemType::Keyword => self.emit(k),
                _ if word.starts_with('.') => self.emit(ItemType::Field),
                _ if word == "true" || word == "false" => self.emit(ItemType::Bool),
                _ => self.emit(ItemType::Identifier),
            }
            return Some(State::InsideAction);
        }
    }

    fn lex_field_or_variable(&mut self, typ: ItemType) -> Option<State> {
        if self.at_terminator() {
            self.emit(if typ == ItemType::Variable {
                ItemType::Variable
            } else {
                ItemType::Dot
            });
            return Some(State::InsideAction);
        }
        let mut r;
        loop {
            r = self.next();
            if !is_alnum(r) {
                self.backup();
                break;
            }
        }
        if !self.at_terminator() {
            return self.errorf(format!(
                "bad character {}",
                r.map(sharp_u).unwrap_or_default()
            ));
        }
        self.emit(typ);
        Some(State::InsideAction)
    }

    fn lex_char(&mut self) -> Option<State> {
        loop {
            match self.next() {
                Some('\\') => {
                    let r = self.next();
                    if r.is_some() && r != Some('\n') {
                        continue;
                    }
                    return self.errorf("unterminated character constant".to_owned());
                }
                None | Some('\n') => {
                    return self.errorf("unterminated character constant".to_owned());
                }
                Some('\'') => break,
                _ => {}
            }
        }
        self.emit(ItemType::CharConstant);
        Some(State::InsideAction)
    }

    fn lex_number(&mut self) -> Option<State> {
        if !self.scan_number() {
            let text = self.input[self.start..self.pos].to_owned();
            return self.errorf(format!("bad number syntax: {}", crate::gofmt::quote(&text)));
        }
        let sign = self.peek();
        if sign == Some('+') || sign == Some('-') {
            if !self.scan_number() || !self.input[..self.pos].ends_with('i') {
                let text = self.input[self.start..self.pos].to_owned();
                return self.errorf(format!("bad number syntax: {}", crate::gofmt::quote(&text)));
            }
            self.emit(ItemType::Complex);
        } else {
            self.emit(ItemType::Number);
        }
        Some(State::InsideAction)
    }

    fn scan_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
            } else if self.accept("oO") {
                digits = "01234567_";
            } else if self.accept("bB") {
                digits = "01_";
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if digits.len() == 11 && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if digits.len() == 23 && self.accept("pP") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        self.accept("i");
        if is_alnum(self.peek()) {
            self.next();
            return false;
        }
        true
    }

    fn lex_quote(&mut self) -> Option<State> {
        loop {
            match self.next() {
                Some('\\') => {
                    let r = self.next();
                    if r.is_some() && r != Some('\n') {
                        continue;
                    }
                    return self.errorf("unterminated quoted string".to_owned());
                }
                None | Some('\n') => return self.errorf("unterminated quoted string".to_owned()),
                Some('"') => break,
                _ => {}
            }
        }
        self.emit(ItemType::String);
        Some(State::InsideAction)
    }

    fn lex_raw_quote(&mut self) -> Option<State> {
        loop {
            match self.next() {
                None => return self.errorf("unterminated raw quoted string".to_owned()),
                Some('`') => break,
                _ => {}
            }
        }
        self.emit(ItemType::RawString);
        Some(State::InsideAction)
    }
}
