//! Go's `fmt` printing rules for template values: `print`, `println`, `printf` and the implicit
//! printing of an action's value.
//!
//! Written by hand because commit messages must match Go byte for byte: `%v` of a struct is `{a b}`,
//! maps print sorted as `map[k:v]`, a `fmt.Stringer` prints through its `String` method, a verb that
//! does not fit its operand prints `%!d(string=x)`, and floats follow `strconv.FormatFloat`.

use std::fmt::Write as _;

use crate::capped::Capped;
use crate::unicode::is_print;
use crate::value::{Kind, Type, Underlying, Value};

/// Deepest nesting printed before giving up (a map that contains itself would never end).
const MAX_PRINT_DEPTH: usize = 100;

/// Most bytes of a value printed in an error message; past it the text ends in `...`.
const MESSAGE_CAP: usize = 64 << 10;

/// Printed text that would pass the cap it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong;

#[derive(Clone, Copy, Default)]
struct Flags {
    sharp: bool,
    zero: bool,
    plus: bool,
    minus: bool,
    space: bool,
    sharp_v: bool,
    plus_v: bool,
    wid: Option<usize>,
    prec: Option<usize>,
}

struct Printer {
    buf: Capped,
    f: Flags,
    erroring: bool,
}

/// `fmt.Sprint`, refused past `cap` bytes.
pub fn sprint_within(args: &[Value], cap: usize) -> Result<String, TooLong> {
    let mut p = Printer::new(cap);
    p.sprint(args);
    p.buf.finish().ok_or(TooLong)
}

/// `fmt.Sprintln`, refused past `cap` bytes.
pub fn sprintln_within(args: &[Value], cap: usize) -> Result<String, TooLong> {
    let mut p = Printer::new(cap);
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            p.buf.push(' ');
        }
        p.print_arg(a, 'v');
    }
    p.buf.push('\n');
    p.buf.finish().ok_or(TooLong)
}

/// `fmt.Sprintf`, refused past `cap` bytes.
pub fn sprintf_within(format: &str, args: &[Value], cap: usize) -> Result<String, TooLong> {
    let mut p = Printer::new(cap);
    p.do_printf(format, args);
    p.buf.finish().ok_or(TooLong)
}

/// `fmt.Sprint(v)` appended to `out` (which refuses to pass its cap).
pub fn print_value_into(out: &mut Capped, v: &Value) {
    let mut p = Printer {
        buf: std::mem::replace(out, Capped::new(0)),
        f: Flags::default(),
        erroring: false,
    };
    p.print_arg(v, 'v');
    *out = p.buf;
}

/// `fmt.Sprintf("%v", v)` for an error message or a name: cut (ending in `...`) past 64 KiB.
pub fn sprint_value(v: &Value) -> String {
    let mut p = Printer::new(MESSAGE_CAP);
    p.print_arg(v, 'v');
    p.buf.finish_cut()
}

/// `fmt.Sprintf` for an error message: cut (ending in `...`) past 64 KiB.
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut p = Printer::new(MESSAGE_CAP);
    p.do_printf(format, args);
    p.buf.finish_cut()
}

fn is_nil_arg(v: &Value) -> bool {
    matches!(v, Value::Invalid | Value::Nil(Type::Any))
}

impl Printer {
    fn new(cap: usize) -> Printer {
        Printer {
            buf: Capped::new(cap),
            f: Flags::default(),
            erroring: false,
        }
    }

    fn sprint(&mut self, args: &[Value]) {
        let mut prev_string = false;
        for (i, a) in args.iter().enumerate() {
            if self.buf.over() {
                return;
            }
            let is_string = a.kind() == Kind::String;
            if i > 0 && !is_string && !prev_string {
                self.buf.push(' ');
            }
            self.print_arg(a, 'v');
            prev_string = is_string;
        }
    }

    fn print_arg(&mut self, arg: &Value, verb: char) {
        if is_nil_arg(arg) {
            match verb {
                'T' | 'v' => self.pad_str("<nil>"),
                _ => self.bad_verb(verb, arg),
            }
            return;
        }
        if verb == 'T' {
            let t = arg.type_name();
            self.fmt_s(&t);
            return;
        }
        if !self.handle_methods(arg, verb) {
            self.print_value(arg, verb, 0);
        }
    }

    fn handle_methods(&mut self, v: &Value, verb: char) -> bool {
        if self.erroring || self.f.sharp_v {
            return false;
        }
        if !matches!(verb, 'v' | 's' | 'x' | 'X' | 'q') {
            return false;
        }
        if let Value::Struct(s) = v
            && let Some(stringer) = s.ty.stringer
        {
            let text = stringer(v);
            self.fmt_string(&text, verb);
            return true;
        }
        false
    }

    fn bad_verb(&mut self, verb: char, v: &Value) {
        self.erroring = true;
        self.buf.push_str("%!");
        self.buf.push(verb);
        self.buf.push('(');
        if is_nil_arg(v) {
            self.buf.push_str("<nil>");
        } else {
            self.buf.push_str(&v.type_name());
            self.buf.push('=');
            self.print_value(v, 'v', 0);
        }
        self.buf.push(')');
        self.erroring = false;
    }

    fn print_value(&mut self, v: &Value, verb: char, depth: usize) {
        // Once over the cap nothing more is kept: stop walking (a value that shares or contains
        // itself may have exponentially many paths).
        if self.buf.over() {
            return;
        }
        if depth > MAX_PRINT_DEPTH {
            self.buf.push_str("...");
            return;
        }
        if depth > 0 && !matches!(v, Value::Invalid) && self.handle_methods(v, verb) {
            return;
        }
        match v {
            Value::Invalid => {
                if depth == 0 {
                    self.buf.push_str("<invalid reflect.Value>");
                } else if verb == 'v' {
                    self.buf.push_str("<nil>");
                } else {
                    self.bad_verb(verb, v);
                }
            }
            Value::Nil(t) => match t.kind() {
                Kind::Interface => {
                    if self.f.sharp_v {
                        let _ = write!(self.buf, "{t}(nil)");
                    } else {
                        self.buf.push_str("<nil>");
                    }
                }
                Kind::Map => {
                    if self.f.sharp_v {
                        let _ = write!(self.buf, "{t}(nil)");
                    } else {
                        self.buf.push_str("map[]");
                    }
                }
                _ => {
                    if self.f.sharp_v {
                        let _ = write!(self.buf, "{t}(nil)");
                    } else {
                        self.buf.push_str("[]");
                    }
                }
            },
            Value::Bool(b) => match verb {
                't' | 'v' => self.pad_str(if *b { "true" } else { "false" }),
                _ => self.bad_verb(verb, v),
            },
            Value::Int(i, t) => {
                let signed = !matches!(t, Type::Uint8);
                self.fmt_integer(*i, signed, verb, v);
            }
            Value::Float(x) => self.fmt_float_verb(*x, verb, v),
            Value::Complex(re, im) => match verb {
                'v' | 'b' | 'g' | 'G' | 'x' | 'X' | 'f' | 'F' | 'e' | 'E' => {
                    let old_plus = self.f.plus;
                    self.buf.push('(');
                    self.fmt_float_verb(*re, verb, v);
                    self.f.plus = true;
                    self.fmt_float_verb(*im, verb, v);
                    self.buf.push_str("i)");
                    self.f.plus = old_plus;
                }
                _ => self.bad_verb(verb, v),
            },
            Value::Str(s) => self.fmt_string(s, verb),
            Value::Map(m) => {
                if self.f.sharp_v {
                    let _ = write!(self.buf, "{}{{", m.ty);
                } else {
                    self.buf.push_str("map[");
                }
                let entries = m.entries.borrow();
                for (i, (k, val)) in entries.iter().enumerate() {
                    if self.buf.over() {
                        break;
                    }
                    if i > 0 {
                        self.buf.push_str(if self.f.sharp_v { ", " } else { " " });
                    }
                    self.print_value(k, verb, depth + 1);
                    self.buf.push(':');
                    self.print_value(val, verb, depth + 1);
                }
                self.buf.push(if self.f.sharp_v { '}' } else { ']' });
            }
            Value::Struct(s) => {
                if self.f.sharp_v {
                    self.buf.push_str(&s.ty.name);
                }
                self.buf.push('{');
                let names: Vec<&str> = match &s.ty.underlying {
                    Underlying::Struct(defs) => defs.iter().map(|d| d.name.as_str()).collect(),
                    Underlying::Map(..) | Underlying::Interface => Vec::new(),
                };
                for (i, field) in s.fields.iter().enumerate() {
                    if self.buf.over() {
                        break;
                    }
                    if i > 0 {
                        self.buf.push_str(if self.f.sharp_v { ", " } else { " " });
                    }
                    if (self.f.plus_v || self.f.sharp_v)
                        && let Some(name) = names.get(i)
                    {
                        self.buf.push_str(name);
                        self.buf.push(':');
                    }
                    self.print_value(field, verb, depth + 1);
                }
                self.buf.push('}');
            }
            Value::Slice(s) => {
                if matches!(verb, 's' | 'q' | 'x' | 'X')
                    && let Type::Slice(e) = &s.ty
                    && matches!(**e, Type::Uint8)
                {
                    let bytes: Vec<u8> = s
                        .items
                        .iter()
                        .map(|b| match b {
                            Value::Int(i, _) => *i as u8,
                            _ => 0,
                        })
                        .collect();
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    self.fmt_string(&text, verb);
                    return;
                }
                if self.f.sharp_v {
                    let _ = write!(self.buf, "{}{{", s.ty);
                    for (i, item) in s.items.iter().enumerate() {
                        if self.buf.over() {
                            break;
                        }
                        if i > 0 {
                            self.buf.push_str(", ");
                        }
                        self.print_value(item, verb, depth + 1);
                    }
                    self.buf.push('}');
                } else {
                    self.buf.push('[');
                    for (i, item) in s.items.iter().enumerate() {
                        if self.buf.over() {
                            break;
                        }
                        if i > 0 {
                            self.buf.push(' ');
                        }
                        self.print_value(item, verb, depth + 1);
                    }
                    self.buf.push(']');
                }
            }
        }
    }

    fn fmt_string(&mut self, s: &str, verb: char) {
        match verb {
            'v' => {
                if self.f.sharp_v {
                    self.fmt_q(s);
                } else {
                    self.fmt_s(s);
                }
            }
            's' => self.fmt_s(s),
            'x' => self.fmt_sx(s, false),
            'X' => self.fmt_sx(s, true),
            'q' => self.fmt_q(s),
            _ => self.bad_verb(verb, &Value::str(s)),
        }
    }

    fn fmt_integer(&mut self, i: i64, signed: bool, verb: char, v: &Value) {
        match verb {
            'v' => {
                if self.f.sharp_v && !signed {
                    let sharp = self.f.sharp;
                    self.f.sharp = true;
                    self.integer(i, 16, signed, 'v', false);
                    self.f.sharp = sharp;
                } else {
                    self.integer(i, 10, signed, verb, false);
                }
            }
            'd' => self.integer(i, 10, signed, verb, false),
            'b' => self.integer(i, 2, signed, verb, false),
            'o' | 'O' => self.integer(i, 8, signed, verb, false),
            'x' => self.integer(i, 16, signed, verb, false),
            'X' => self.integer(i, 16, signed, verb, true),
            'c' => {
                let c = char_of(i);
                self.pad_str(&c.to_string());
            }
            'q' => {
                let c = char_of(i);
                let q = quote_rune(c, self.f.plus);
                self.pad_str(&q);
            }
            'U' => self.fmt_unicode(i),
            _ => self.bad_verb(verb, v),
        }
    }

    fn integer(&mut self, i: i64, base: u32, signed: bool, verb: char, upper: bool) {
        let negative = signed && i < 0;
        let mut u: u64 = if negative { i.unsigned_abs() } else { i as u64 };
        let mut prec = 0usize;
        if let Some(p) = self.f.prec {
            prec = p;
            if p == 0 && u == 0 {
                let old = self.f.zero;
                self.f.zero = false;
                self.write_padding(self.f.wid.unwrap_or(0));
                self.f.zero = old;
                return;
            }
        } else if self.f.zero && self.f.wid.is_some() {
            prec = self.f.wid.unwrap_or(0);
            if negative || self.f.plus || self.f.space {
                prec = prec.saturating_sub(1);
            }
        }
        let digits: &[u8] = if upper {
            b"0123456789ABCDEFX"
        } else {
            b"0123456789abcdefx"
        };
        let mut out: Vec<u8> = Vec::new();
        loop {
            out.push(digits[(u % u64::from(base)) as usize]);
            u /= u64::from(base);
            if u == 0 {
                break;
            }
        }
        while out.len() < prec {
            out.push(b'0');
        }
        if self.f.sharp {
            match base {
                2 => out.extend_from_slice(b"b0"),
                8 if out.last() != Some(&b'0') => {
                    out.push(b'0');
                }
                16 => {
                    out.push(digits[16]);
                    out.push(b'0');
                }
                _ => {}
            }
        }
        if verb == 'O' {
            out.extend_from_slice(b"o0");
        }
        if negative {
            out.push(b'-');
        } else if self.f.plus {
            out.push(b'+');
        } else if self.f.space {
            out.push(b' ');
        }
        out.reverse();
        let s = String::from_utf8_lossy(&out).into_owned();
        let old = self.f.zero;
        self.f.zero = false;
        self.pad_str(&s);
        self.f.zero = old;
    }

    fn fmt_unicode(&mut self, i: i64) {
        let u = i as u64;
        let mut prec = 4;
        if let Some(p) = self.f.prec
            && p > 4
        {
            prec = p;
        }
        // Padded by hand: a precision may be up to a million (as in Go), past the widths
        // `format!` takes.
        let hex = format!("{u:X}");
        let mut s = String::with_capacity(2 + prec.max(hex.len()));
        s.push_str("U+");
        s.extend(std::iter::repeat_n('0', prec.saturating_sub(hex.len())));
        s.push_str(&hex);
        if self.f.sharp
            && let Some(c) = char::from_u32(u as u32).filter(|c| u <= 0x10FFFF && is_print(*c))
        {
            s.push_str(&format!(" '{c}'"));
        }
        let old = self.f.zero;
        self.f.zero = false;
        self.pad_str(&s);
        self.f.zero = old;
    }

    fn fmt_float_verb(&mut self, x: f64, verb: char, v: &Value) {
        match verb {
            'v' => self.fmt_float(x, 'g', -1),
            'b' | 'g' | 'G' | 'x' | 'X' => self.fmt_float(x, verb, -1),
            'f' | 'e' | 'E' => self.fmt_float(x, verb, 6),
            'F' => self.fmt_float(x, 'f', 6),
            _ => self.bad_verb(verb, v),
        }
    }

    fn fmt_float(&mut self, v: f64, verb: char, prec: i32) {
        let prec = self.f.prec.map(|p| p as i32).unwrap_or(prec);
        let body = format_float(v, verb, prec);
        let mut num = if body.starts_with('-') || body.starts_with('+') {
            body
        } else {
            format!("+{body}")
        };
        if self.f.space && num.starts_with('+') && !self.f.plus {
            num.replace_range(0..1, " ");
        }
        if num[1..].starts_with("Inf") || num[1..].starts_with("NaN") {
            let old = self.f.zero;
            self.f.zero = false;
            if num[1..].starts_with("NaN") && !self.f.space && !self.f.plus {
                num.remove(0);
            }
            self.pad_str(&num);
            self.f.zero = old;
            return;
        }
        if self.f.sharp && verb != 'b' {
            let mut digits: i32 = match verb {
                'v' | 'g' | 'G' | 'x' => {
                    if prec == -1 {
                        6
                    } else {
                        prec
                    }
                }
                _ => 0,
            };
            let mut tail = String::new();
            let bytes: Vec<char> = num.chars().collect();
            let mut head: String = bytes[..1].iter().collect();
            let mut has_point = false;
            let mut saw_nonzero = false;
            let mut i = 1;
            while i < bytes.len() {
                let c = bytes[i];
                match c {
                    '.' => {
                        has_point = true;
                        head.push(c);
                    }
                    'p' | 'P' => {
                        tail = bytes[i..].iter().collect();
                        break;
                    }
                    'e' | 'E' if verb != 'x' && verb != 'X' => {
                        tail = bytes[i..].iter().collect();
                        break;
                    }
                    _ => {
                        if c != '0' {
                            saw_nonzero = true;
                        }
                        if saw_nonzero {
                            digits -= 1;
                        }
                        head.push(c);
                    }
                }
                i += 1;
            }
            if !has_point {
                if head.len() == 2 && head.ends_with('0') {
                    digits -= 1;
                }
                head.push('.');
            }
            while digits > 0 {
                head.push('0');
                digits -= 1;
            }
            head.push_str(&tail);
            num = head;
        }
        if self.f.plus || !num.starts_with('+') {
            if self.f.zero && self.f.wid.is_some_and(|w| w > num.chars().count()) {
                let w = self.f.wid.unwrap_or(0);
                let sign = num.remove(0);
                self.buf.push(sign);
                self.write_padding(w - num.chars().count() - 1);
                self.buf.push_str(&num);
                return;
            }
            self.pad_str(&num);
            return;
        }
        self.pad_str(&num[1..]);
    }

    fn fmt_s(&mut self, s: &str) {
        let s = match self.f.prec {
            Some(p) => match s.char_indices().nth(p) {
                Some((i, _)) => &s[..i],
                None => s,
            },
            None => s,
        };
        self.pad_str(s);
    }

    fn fmt_sx(&mut self, s: &str, upper: bool) {
        let digits: &[u8] = if upper {
            b"0123456789ABCDEFX"
        } else {
            b"0123456789abcdefx"
        };
        let b = s.as_bytes();
        let mut length = b.len();
        if let Some(p) = self.f.prec {
            length = length.min(p);
        }
        let mut width = 2 * length;
        if width > 0 {
            if self.f.space {
                if self.f.sharp {
                    width *= 2;
                }
                width += length - 1;
            } else if self.f.sharp {
                width += 2;
            }
        } else {
            if let Some(w) = self.f.wid {
                self.write_padding(w);
            }
            return;
        }
        let wid = self.f.wid.unwrap_or(0);
        if !self.buf.fits(width.max(wid)) {
            return;
        }
        if wid > width && !self.f.minus {
            self.write_padding(wid - width);
        }
        let mut out = String::with_capacity(width);
        if self.f.sharp {
            out.push('0');
            out.push(digits[16] as char);
        }
        for (i, c) in b.iter().take(length).enumerate() {
            if self.f.space && i > 0 {
                out.push(' ');
                if self.f.sharp {
                    out.push('0');
                    out.push(digits[16] as char);
                }
            }
            out.push(digits[(c >> 4) as usize] as char);
            out.push(digits[(c & 0xF) as usize] as char);
        }
        self.buf.push_str(&out);
        if wid > width && self.f.minus {
            self.write_padding(wid - width);
        }
    }

    fn fmt_q(&mut self, s: &str) {
        let s = match self.f.prec {
            Some(p) => match s.char_indices().nth(p) {
                Some((i, _)) => &s[..i],
                None => s,
            },
            None => s,
        };
        // A quoted string is at least its text and two quotes.
        if !self.buf.fits(s.len().saturating_add(2)) {
            return;
        }
        if self.f.sharp && can_backquote(s) {
            let q = format!("`{s}`");
            self.pad_str(&q);
            return;
        }
        if self.f.wid.is_none_or(|w| w == 0) {
            quote_into(&mut self.buf, s, '"', self.f.plus);
            return;
        }
        let mut q = Capped::new(self.buf.cap().saturating_sub(self.buf.len()));
        quote_into(&mut q, s, '"', self.f.plus);
        match q.finish() {
            Some(q) => self.pad_str(&q),
            None => self.buf.refuse(),
        }
    }

    fn write_padding(&mut self, n: usize) {
        let c = if self.f.zero { '0' } else { ' ' };
        self.buf.push_n(c, n);
    }

    fn pad_str(&mut self, s: &str) {
        let Some(wid) = self.f.wid.filter(|w| *w > 0) else {
            self.buf.push_str(s);
            return;
        };
        let n = s.chars().count();
        let pad = wid.saturating_sub(n);
        if self.f.minus {
            self.buf.push_str(s);
            self.write_padding(pad);
        } else {
            self.write_padding(pad);
            self.buf.push_str(s);
        }
    }

    fn do_printf(&mut self, format: &str, args: &[Value]) {
        let fb = format.as_bytes();
        let end = fb.len();
        let mut arg_num = 0usize;
        let mut after_index;
        let mut reordered = false;
        let mut i = 0usize;
        'format_loop: while i < end {
            if self.buf.over() {
                return;
            }
            let mut good_arg_num = true;
            let lasti = i;
            while i < end && fb[i] != b'%' {
                i += 1;
            }
            if i > lasti {
                self.buf.push_str(&format[lasti..i]);
            }
            if i >= end {
                break;
            }
            i += 1;
            self.f = Flags::default();
            while i < end {
                let c = fb[i];
                match c {
                    b'#' => self.f.sharp = true,
                    b'0' => self.f.zero = !self.f.minus,
                    b'+' => self.f.plus = true,
                    b'-' => {
                        self.f.minus = true;
                        self.f.zero = false;
                    }
                    b' ' => self.f.space = true,
                    _ => {
                        if c.is_ascii_lowercase() && arg_num < args.len() {
                            if c == b'v' {
                                self.f.sharp_v = self.f.sharp;
                                self.f.sharp = false;
                                self.f.plus_v = self.f.plus;
                                self.f.plus = false;
                            }
                            self.print_arg(&args[arg_num], c as char);
                            arg_num += 1;
                            i += 1;
                            continue 'format_loop;
                        }
                        break;
                    }
                }
                i += 1;
            }
            // Argument index, width.
            let (n, ni, ai) = arg_number(
                arg_num,
                format,
                i,
                args.len(),
                &mut reordered,
                &mut good_arg_num,
            );
            arg_num = n;
            i = ni;
            after_index = ai;
            if i < end && fb[i] == b'*' {
                i += 1;
                let (w, ok, n) = int_from_arg(args, arg_num);
                arg_num = n;
                if !ok {
                    self.buf.push_str("%!(BADWIDTH)");
                    self.f.wid = None;
                } else if w < 0 {
                    self.f.wid = Some(w.unsigned_abs() as usize);
                    self.f.minus = true;
                    self.f.zero = false;
                } else {
                    self.f.wid = Some(w as usize);
                }
                after_index = false;
            } else {
                let (w, present, ni) = parse_num(fb, i, end);
                i = ni;
                self.f.wid = if present { Some(w) } else { None };
                if after_index && present {
                    good_arg_num = false;
                }
            }
            if i + 1 < end && fb[i] == b'.' {
                i += 1;
                if after_index {
                    good_arg_num = false;
                }
                let (n, ni, ai) = arg_number(
                    arg_num,
                    format,
                    i,
                    args.len(),
                    &mut reordered,
                    &mut good_arg_num,
                );
                arg_num = n;
                i = ni;
                after_index = ai;
                if i < end && fb[i] == b'*' {
                    i += 1;
                    let (p, ok, n) = int_from_arg(args, arg_num);
                    arg_num = n;
                    if p < 0 || !ok {
                        self.f.prec = None;
                    } else {
                        self.f.prec = Some(p as usize);
                    }
                    if !ok {
                        self.buf.push_str("%!(BADPREC)");
                    }
                    after_index = false;
                } else {
                    let (p, present, ni) = parse_num(fb, i, end);
                    i = ni;
                    self.f.prec = Some(if present { p } else { 0 });
                }
            }
            if !after_index {
                let (n, ni, _) = arg_number(
                    arg_num,
                    format,
                    i,
                    args.len(),
                    &mut reordered,
                    &mut good_arg_num,
                );
                arg_num = n;
                i = ni;
            }
            if i >= end {
                self.buf.push_str("%!(NOVERB)");
                break;
            }
            let Some(verb) = format[i..].chars().next() else {
                break;
            };
            i += verb.len_utf8();
            if verb == '%' {
                self.buf.push('%');
            } else if !good_arg_num {
                self.buf.push_str("%!");
                self.buf.push(verb);
                self.buf.push_str("(BADINDEX)");
            } else if arg_num >= args.len() {
                self.buf.push_str("%!");
                self.buf.push(verb);
                self.buf.push_str("(MISSING)");
            } else {
                if verb == 'v' {
                    self.f.sharp_v = self.f.sharp;
                    self.f.sharp = false;
                    self.f.plus_v = self.f.plus;
                    self.f.plus = false;
                }
                self.print_arg(&args[arg_num], verb);
                arg_num += 1;
            }
        }
        if !reordered && arg_num < args.len() {
            self.f = Flags::default();
            self.buf.push_str("%!(EXTRA ");
            for (k, a) in args[arg_num..].iter().enumerate() {
                if k > 0 {
                    self.buf.push_str(", ");
                }
                if is_nil_arg(a) {
                    self.buf.push_str("<nil>");
                } else {
                    self.buf.push_str(&a.type_name());
                    self.buf.push('=');
                    self.print_arg(a, 'v');
                }
            }
            self.buf.push(')');
        }
    }
}

fn char_of(i: i64) -> char {
    if !(0..=0x10FFFF).contains(&i) {
        return '\u{FFFD}';
    }
    char::from_u32(i as u32).unwrap_or('\u{FFFD}')
}

fn too_large(x: i64) -> bool {
    !(-1_000_000..=1_000_000).contains(&x)
}

fn int_from_arg(args: &[Value], arg_num: usize) -> (i64, bool, usize) {
    if arg_num < args.len() {
        let (mut num, mut ok) = match &args[arg_num] {
            Value::Int(i, _) => (*i, true),
            _ => (0, false),
        };
        if too_large(num) {
            num = 0;
            ok = false;
        }
        return (num, ok, arg_num + 1);
    }
    (0, false, arg_num)
}

fn parse_num(fb: &[u8], start: usize, end: usize) -> (usize, bool, usize) {
    if start >= end {
        return (0, false, end);
    }
    let mut num = 0usize;
    let mut present = false;
    let mut i = start;
    while i < end && fb[i].is_ascii_digit() {
        if num > 1_000_000 {
            return (0, false, end);
        }
        num = num * 10 + usize::from(fb[i] - b'0');
        present = true;
        i += 1;
    }
    (num, present, i)
}

fn arg_number(
    arg_num: usize,
    format: &str,
    i: usize,
    num_args: usize,
    reordered: &mut bool,
    good: &mut bool,
) -> (usize, usize, bool) {
    let fb = format.as_bytes();
    if fb.len() <= i || fb[i] != b'[' {
        return (arg_num, i, false);
    }
    *reordered = true;
    let rest = &fb[i..];
    // parseArgNumber
    let (index, wid, ok) = 'p: {
        if rest.len() < 3 {
            break 'p (0usize, 1usize, false);
        }
        for j in 1..rest.len() {
            if rest[j] == b']' {
                let (w, present, newi) = parse_num(rest, 1, j);
                if !present || newi != j {
                    break 'p (0, j + 1, false);
                }
                break 'p (w.wrapping_sub(1), j + 1, true);
            }
        }
        (0, 1, false)
    };
    if ok && index < num_args {
        return (index, i + wid, true);
    }
    *good = false;
    (arg_num, i + wid, ok)
}

/// `strconv.CanBackquote`.
pub fn can_backquote(s: &str) -> bool {
    s.chars()
        .all(|c| c != '`' && c != '\u{FEFF}' && (c == '\t' || !(c < ' ' || c == '\u{7F}')))
}

/// `strconv.Quote` (or `QuoteToASCII` when `ascii`) with the given quote character, appended to
/// `out` (which stops at its cap).
pub fn quote_into(out: &mut Capped, s: &str, q: char, ascii: bool) {
    out.push(q);
    let mut one = String::new();
    // Runs of printable ASCII other than the quote and `\` are copied as they are.
    let plain = |c: char| (' '..='~').contains(&c) && c != q && c != '\\';
    let mut rest = s;
    while !rest.is_empty() && !out.over() {
        let run = rest.find(|c| !plain(c)).unwrap_or(rest.len());
        out.push_str(&rest[..run]);
        rest = &rest[run..];
        if let Some(c) = rest.chars().next() {
            one.clear();
            append_escaped(&mut one, c, q, ascii);
            out.push_str(&one);
            rest = &rest[c.len_utf8()..];
        }
    }
    out.push(q);
}

/// `strconv.Quote`.
pub fn quote(s: &str) -> String {
    let mut out = Capped::new(usize::MAX);
    quote_into(&mut out, s, '"', false);
    out.finish_cut()
}

/// `strconv.QuoteRune` / `QuoteRuneToASCII`.
pub fn quote_rune(c: char, ascii: bool) -> String {
    let mut out = String::from("'");
    append_escaped(&mut out, c, '\'', ascii);
    out.push('\'');
    out
}

fn append_escaped(out: &mut String, c: char, q: char, ascii: bool) {
    if c == q || c == '\\' {
        out.push('\\');
        out.push(c);
        return;
    }
    if ascii {
        if (c as u32) < 0x80 && is_print(c) {
            out.push(c);
            return;
        }
    } else if is_print(c) {
        out.push(c);
        return;
    }
    match c {
        '\u{07}' => out.push_str("\\a"),
        '\u{08}' => out.push_str("\\b"),
        '\u{0C}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{0B}' => out.push_str("\\v"),
        c if (c as u32) < 0x20 || c == '\u{7F}' => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if (c as u32) < 0x10000 => {
            let _ = write!(out, "\\u{:04x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\U{:08x}", c as u32);
        }
    }
}

/// More significant decimal digits than any finite f64 has exactly (767).
const MAX_SIGNIFICANT: usize = 800;

/// More digits after the decimal point than any finite f64 has exactly (1,074, for the
/// smallest subnormal).
const MAX_FRACTION: usize = 1_100;

/// Decimal digits and decimal point position of a finite, non-negative float (`dp` digits before the
/// point), either shortest (`prec` None) or rounded to `prec` significant digits.
fn float_digits(v: f64, sig: Option<usize>) -> (Vec<u8>, i32) {
    let s = match sig {
        None => format!("{v:e}"),
        // A finite f64 has at most 767 significant decimal digits, so asking for more only adds
        // zeros (dropped below); capping keeps the precision within what `format!` accepts (a
        // u16).
        Some(n) => format!("{:.*e}", n.clamp(1, MAX_SIGNIFICANT) - 1, v),
    };
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut digits: Vec<u8> = mant.bytes().filter(u8::is_ascii_digit).collect();
    if digits.iter().all(|d| *d == b'0') {
        return (Vec::new(), 0);
    }
    while digits.last() == Some(&b'0') {
        digits.pop();
    }
    (digits, exp + 1)
}

/// `strconv.FormatFloat(v, verb, prec, 64)` for verbs `e E f g G` (`prec` -1 is shortest).
pub fn format_float(v: f64, verb: char, prec: i32) -> String {
    if v.is_nan() {
        return "NaN".to_owned();
    }
    if v.is_infinite() {
        return if v > 0.0 {
            "+Inf".to_owned()
        } else {
            "-Inf".to_owned()
        };
    }
    let neg = v.is_sign_negative();
    let a = v.abs();
    let shortest = prec < 0;
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    match verb {
        'e' | 'E' => {
            let (digits, dp) = if shortest {
                float_digits(a, None)
            } else {
                float_digits(a, Some(prec as usize + 1))
            };
            let p = if shortest {
                digits.len().saturating_sub(1)
            } else {
                prec as usize
            };
            fmt_e(&mut out, &digits, dp, p, verb);
        }
        'f' | 'F' => {
            if shortest {
                let (digits, dp) = float_digits(a, None);
                let p = (digits.len() as i32 - dp).max(0) as usize;
                fmt_f(&mut out, &digits, dp, p);
            } else {
                // Exact past MAX_FRACTION digits, so the rest are zeros: `format!` takes at most
                // a u16 precision, and Go allows up to a million.
                let prec = prec as usize;
                let _ = write!(out, "{:.*}", prec.min(MAX_FRACTION), a);
                out.extend(std::iter::repeat_n('0', prec.saturating_sub(MAX_FRACTION)));
            }
        }
        'g' | 'G' => {
            let (digits, dp, mut p) = if shortest {
                let (d, dp) = float_digits(a, None);
                let n = d.len();
                (d, dp, n as i32)
            } else {
                let p = if prec == 0 { 1 } else { prec };
                let (d, dp) = float_digits(a, Some(p as usize));
                (d, dp, p)
            };
            let nd = digits.len() as i32;
            let mut eprec = p;
            if eprec > nd && nd >= dp {
                eprec = nd;
            }
            if shortest {
                eprec = 6;
            }
            let exp = dp - 1;
            let e_verb = if verb == 'G' { 'E' } else { 'e' };
            if exp < -4 || exp >= eprec {
                if p > nd {
                    p = nd;
                }
                fmt_e(&mut out, &digits, dp, (p - 1).max(0) as usize, e_verb);
            } else {
                if p > dp {
                    p = nd;
                }
                fmt_f(&mut out, &digits, dp, (p - dp).max(0) as usize);
            }
        }
        _ => {
            let (digits, dp) = float_digits(a, None);
            fmt_e(&mut out, &digits, dp, digits.len().saturating_sub(1), 'e');
        }
    }
    out
}

fn fmt_e(out: &mut String, digits: &[u8], dp: i32, prec: usize, verb: char) {
    out.push(digits.first().map_or('0', |d| *d as char));
    if prec > 0 {
        out.push('.');
        for k in 1..=prec {
            out.push(digits.get(k).map_or('0', |d| *d as char));
        }
    }
    out.push(verb);
    let exp = if digits.is_empty() { 0 } else { dp - 1 };
    out.push(if exp < 0 { '-' } else { '+' });
    let e = exp.unsigned_abs();
    if e < 10 {
        out.push('0');
    }
    let _ = write!(out, "{e}");
}

fn fmt_f(out: &mut String, digits: &[u8], dp: i32, prec: usize) {
    if dp > 0 {
        for k in 0..dp as usize {
            out.push(digits.get(k).map_or('0', |d| *d as char));
        }
    } else {
        out.push('0');
    }
    if prec > 0 {
        out.push('.');
        for k in 1..=prec as i32 {
            let idx = dp + k - 1;
            let c = if idx >= 0 {
                digits.get(idx as usize).map_or('0', |d| *d as char)
            } else {
                '0'
            };
            out.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_follow_strconv() {
        assert_eq!(format_float(1.0, 'g', -1), "1");
        assert_eq!(format_float(1e6, 'g', -1), "1e+06");
        assert_eq!(format_float(123456.0, 'g', -1), "123456");
        assert_eq!(format_float(0.0001, 'g', -1), "0.0001");
        assert_eq!(format_float(0.00001, 'g', -1), "1e-05");
        assert_eq!(format_float(3.26, 'f', 2), "3.26");
        assert_eq!(format_float(3.0, 'e', 6), "3.000000e+00");
        assert_eq!(format_float(0.0, 'g', -1), "0");
        assert_eq!(format_float(100.0, 'g', 2), "1e+02");
        assert_eq!(format_float(0.125, 'f', 2), "0.12");
        assert_eq!(format_float(2.5, 'f', 0), "2");
    }

    /// Go takes precisions up to a million; `format!` panics past 65,535 (a fuzzing find, with
    /// `%.69036g`).
    #[test]
    fn precisions_past_what_format_takes() {
        const EXACT: &str = "1000000000000000055511151231257827021181583404541015625";
        let f = format_float(0.1, 'f', 70_000);
        assert_eq!(f.len(), 70_002);
        assert_eq!(&f[..2], "0.");
        assert_eq!(&f[2..2 + EXACT.len()], EXACT);
        assert!(f[2 + EXACT.len()..].bytes().all(|b| b == b'0'));
        let e = format_float(0.1, 'e', 70_000);
        assert_eq!(e.len(), 70_006);
        assert_eq!(&e[..3], "1.0");
        assert_eq!(&e[2..1 + EXACT.len()], &EXACT[1..]);
        assert!(e.ends_with("0e-01"));
        // %g stops at the exact digits.
        assert_eq!(format_float(0.1, 'g', 70_000), format!("0.{EXACT}"));
        assert_eq!(format_float(1e21, 'g', 70_000), "1000000000000000000000");
        // The smallest subnormal, in full: 1,074 digits after the point, then zeros.
        let tiny = format_float(5e-324, 'f', 1_200);
        assert_eq!(tiny.len(), 1_202);
        assert!(tiny[2..].starts_with(&"0".repeat(323)));
        assert!(tiny[..1_076].ends_with("5"), "{}", &tiny[1_000..1_100]);
        assert!(tiny[1_076..].bytes().all(|b| b == b'0'));
        let u = sprintf_within("%.70000U", &[Value::int(0x41)], usize::MAX).unwrap();
        assert_eq!(u.len(), 70_002);
        assert!(u.starts_with("U+000") && u.ends_with("041"));
        // In an error message the same text is cut.
        let cut = sprintf("%.70000U", &[Value::int(0x41)]);
        assert_eq!(cut.len(), 64 * 1024 + 3);
        assert!(cut.ends_with("..."));
        let g = sprintf_within("%.69036g", &[Value::Float(1e-10)], usize::MAX).unwrap();
        assert!(g.starts_with("1.00000000000000003643219731549774"), "{g}");
        assert!(g.ends_with("e-10"));
    }

    #[test]
    fn printf_basics() {
        assert_eq!(
            sprintf(
                "%05.1f|%-6s|%q|%v",
                &[
                    Value::Float(3.26),
                    Value::str("ab"),
                    Value::str("x"),
                    Value::int(3)
                ]
            ),
            "003.3|ab    |\"x\"|3"
        );
        assert_eq!(
            sprintf("%d %s", &[Value::str("a")]),
            "%!d(string=a) %!s(MISSING)"
        );
        assert_eq!(
            sprintf(
                "%x %X %o %b",
                &[
                    Value::int(255),
                    Value::int(255),
                    Value::int(8),
                    Value::int(5)
                ]
            ),
            "ff FF 10 101"
        );
    }
}
