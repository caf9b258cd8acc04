//! A string that never grows past a cap, for the text whose size is known only once it is built
//! (printing, JSON, escaping, regular-expression replacement): a push that would pass the cap is
//! dropped and remembered, so the builder stops early and its caller reports the limit; memory never
//! holds more than the cap.

use std::fmt;

/// A string with a cap on its length in bytes.
#[derive(Debug)]
pub struct Capped {
    text: String,
    cap: usize,
    over: bool,
}

impl Capped {
    /// An empty string that may grow to `cap` bytes (no string grows past `isize::MAX`).
    pub fn new(cap: usize) -> Capped {
        Capped {
            text: String::new(),
            cap: cap.min(isize::MAX as usize),
            over: false,
        }
    }

    /// Whether a push was refused: the whole text would pass the cap.
    pub fn over(&self) -> bool {
        self.over
    }

    /// The cap.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Bytes so far.
    pub fn len(&self) -> usize {
        self.text.len()
    }

    /// Whether `n` more bytes fit; if not, the string is over (and stays so).
    pub fn fits(&mut self, n: usize) -> bool {
        if self.over {
            return false;
        }
        let Some(need) = self.text.len().checked_add(n).filter(|l| *l <= self.cap) else {
            self.over = true;
            return false;
        };
        if need > self.text.capacity() {
            // Grow as String does (doubling), but never past the cap.
            let want = self.text.capacity().saturating_mul(2).clamp(need, self.cap);
            self.text.reserve_exact(want - self.text.len());
        }
        true
    }

    /// Become over: what is being built is known not to fit.
    pub fn refuse(&mut self) {
        self.over = true;
    }

    /// Append `s`; if it does not fit, as much of it as fits, and become over (a message that
    /// is cut shows what fitted).
    pub fn push_str(&mut self, s: &str) {
        if self.over {
            return;
        }
        if self.fits(s.len()) {
            self.text.push_str(s);
            return;
        }
        let mut end = (self.cap - self.text.len()).min(s.len());
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.text.reserve_exact(end);
        self.text.push_str(&s[..end]);
    }

    /// Append `c`, or become over.
    pub fn push(&mut self, c: char) {
        if self.fits(c.len_utf8()) {
            self.text.push(c);
        }
    }

    /// Append `c` `n` times, or become over.
    pub fn push_n(&mut self, c: char, n: usize) {
        if n.checked_mul(c.len_utf8()).is_some_and(|b| self.fits(b)) {
            self.text.extend(std::iter::repeat_n(c, n));
        } else {
            self.refuse();
        }
    }

    /// The text, or `None` when it was over.
    pub fn finish(self) -> Option<String> {
        (!self.over).then_some(self.text)
    }

    /// The text, ending in `...` when it was cut (for error messages).
    pub fn finish_cut(self) -> String {
        let mut text = self.text;
        if self.over {
            text.push_str("...");
        }
        text
    }
}

impl fmt::Write for Capped {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push_str(s);
        if self.over {
            return Err(fmt::Error);
        }
        Ok(())
    }
}

/// The length of `String::from_utf8_lossy(b)`.
pub fn lossy_len(b: &[u8]) -> usize {
    b.utf8_chunks()
        .map(|c| c.valid().len() + if c.invalid().is_empty() { 0 } else { 3 })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_past_the_cap_and_never_holds_more() {
        let mut c = Capped::new(5);
        c.push_str("abc");
        c.push_n('-', 2);
        assert!(!c.over());
        assert_eq!(c.text, "abc--");
        c.push_str("xyz");
        assert!(c.over());
        assert_eq!(c.text, "abc--");
        c.push_str("");
        assert_eq!(c.len(), 5);
        assert!(c.text.capacity() <= 5);
        assert_eq!(c.finish(), None);
        let mut part = Capped::new(4);
        part.push_str("ab\u{e9}z");
        assert!(part.over());
        assert_eq!(part.finish_cut(), "ab\u{e9}...");
        let mut big = Capped::new(usize::MAX);
        big.push_n(' ', usize::MAX);
        assert!(big.over());
    }

    #[test]
    fn lossy_matches_the_standard_library() {
        for b in [
            &b"ok"[..],
            b"\xff",
            b"a\xe2\x82",
            b"\xe2\x82\xac\xff\xfe",
            b"",
        ] {
            assert_eq!(lossy_len(b), String::from_utf8_lossy(b).len());
        }
    }
}
