//! Semantic-version ranges with Masterminds `semver/v3` (v3.4+) meaning, and
//! tag parsing with Flux's strictness.
//!
//! Why our own constraint layer: Flux and Argo CD both evaluate ranges with
//! the Go library Masterminds `semver/v3`, and users paste those ranges into
//! our policies. Its grammar (`||`, whitespace-or-comma AND, hyphen ranges,
//! x-ranges, a bare version meaning *exactly*) and its prerelease rule differ
//! from Cargo's `VersionReq` and from npm, so neither the `semver` crate's
//! requirement type nor a node-semver port gives the same answers. We keep
//! `semver::Version` for the strict tag parse and for precedence ordering
//! (which, like Masterminds `Compare`, ignores build metadata) and implement
//! the constraint grammar here.
//!
//! Two different parsers live in this module on purpose:
//! * [`parse_tag`] is strict (SemVer 2.0.0 after one optional leading `v`),
//!   exactly what Flux's `version.ParseVersion` accepts. A tag such as `1.2` or
//!   `1.2.3.4` is not a candidate at all.
//! * Versions *inside a range* are lenient (`v` prefix, one to three parts,
//!   wildcards `x`, `X`, `*`), as Masterminds allows.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::sync::LazyLock;

use regex::Regex;

use semver::{Prerelease, Version};

/// Parses a tag as Flux does: strip one leading lowercase `v`, then require a
/// strict SemVer 2.0.0 version (no leading zeros, exactly three parts).
///
/// Returns `None` for anything else; such tags are silently not candidates
/// for a semver policy.
pub fn parse_tag(tag: &str) -> Option<Version> {
    let rest = tag.strip_prefix('v').unwrap_or(tag);
    // `semver` rejects whitespace, a second `v`, leading zeros and partial
    // versions, which is exactly SemVer 2.0.0 strictness.
    Version::parse(rest).ok()
}

/// Error for a range that Masterminds would reject.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("improper constraint: {reason}")]
pub struct RangeError {
    reason: String,
}

impl RangeError {
    fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

/// The comparison operator of one constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `=` or no operator.
    Equal,
    NotEqual,
    Greater,
    Less,
    GreaterEqual,
    LessEqual,
    /// `~` and `~>`.
    Tilde,
    Caret,
}

/// One operator plus version, e.g. `>=1.2` or `1.x`.
///
/// `dirty` marks a version written with missing or wildcard parts; the
/// operators then use x-range meaning. `minor_dirty` means the minor part was
/// missing or a wildcard (so `1`, `1.x`), `patch_dirty` that only the patch
/// was (so `1.2`, `1.2.*`). A wildcard major (`*`, `x.1`) is dirty with both
/// flags false, as in Masterminds.
#[derive(Debug, Clone)]
struct Comparator {
    op: Op,
    version: Version,
    dirty: bool,
    minor_dirty: bool,
    patch_dirty: bool,
}

/// A parsed range: OR of AND groups.
#[derive(Debug, Clone)]
pub struct Range {
    source: String,
    groups: Vec<Group>,
}

#[derive(Debug, Clone)]
struct Group {
    comparators: Vec<Comparator>,
    /// Masterminds v3.4+: a prerelease version may only match a group in
    /// which at least one comparator itself carries a prerelease.
    allows_prerelease: bool,
}

impl Range {
    /// Parses a Masterminds constraint string.
    ///
    /// Which strings parse follows Masterminds v3.2.1 and later (Flux uses
    /// v3.5): hyphen ranges are rewritten first, over the whole string; the
    /// result is split on `||`; in each alternative, constraints must be
    /// separated by whitespace or by one comma (`>1.0 <2.0`, `>1.0, <2.0`),
    /// so `>1.0<2.0`, `1.2.3~1.2.3` and a trailing comma are invalid.
    ///
    /// # Errors
    /// Returns [`RangeError`] for anything Masterminds rejects as an
    /// improper constraint, including the empty string.
    pub fn parse(text: &str) -> Result<Self, RangeError> {
        if text.trim().is_empty() {
            return Err(RangeError::new("empty range"));
        }
        let rewritten = rewrite_hyphen_ranges(text)?;
        let mut groups = Vec::new();
        for segment in rewritten.split("||") {
            let comparators = parse_and_group(segment).map_err(|e| {
                if rewritten == text {
                    e
                } else {
                    RangeError::new(format!(
                        "{} (after reading hyphen ranges, the range is '{}')",
                        e.reason,
                        rewritten.trim_end()
                    ))
                }
            })?;
            let allows_prerelease = comparators.iter().any(|c| !c.version.pre.is_empty());
            groups.push(Group {
                comparators,
                allows_prerelease,
            });
        }
        Ok(Self {
            source: text.to_owned(),
            groups,
        })
    }

    /// The range as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether `version` satisfies the range.
    pub fn matches(&self, version: &Version) -> bool {
        self.groups.iter().any(|group| {
            if !version.pre.is_empty() && !group.allows_prerelease {
                return false;
            }
            group.comparators.iter().all(|c| c.matches(version))
        })
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl std::str::FromStr for Range {
    type Err = RangeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// A version as written inside a range: up to three parts of
/// `[0-9xX*|]` (validated later), and an optional prerelease.
#[derive(Debug)]
struct LooseVersion<'a> {
    parts: Vec<&'a str>,
    pre: &'a str,
}

fn is_wildcard(part: &str) -> bool {
    matches!(part, "x" | "X" | "*")
}

/// A byte that may appear in a version part inside a range. Masterminds'
/// pattern admits `|` too; such a part is then rejected when it is read as
/// a number (unless a wildcard before it means it is never read).
fn is_part_char(b: u8) -> bool {
    b.is_ascii_digit() || matches!(b, b'x' | b'X' | b'*' | b'|')
}

/// Whitespace as Go's regexp `\s` knows it: no vertical tab, no Unicode.
fn is_go_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0C')
}

/// A hyphen range `A - B`: whitespace around the `-` is required, leading
/// and trailing whitespace belongs to the match (Masterminds replaces it
/// too, which is why `>1 2 - 3` is invalid but `>1, 2 - 3` is not).
///
/// Written as a regex because the rewrite is defined on the whole string,
/// before the `||` split: its version pattern is the loose one above,
/// including `|`, so `1||2 - 3` reads as `>= 1||2, <= 3`.
static HYPHEN_RANGE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let version = r"v?[0-9xX*|]+(?:\.[0-9xX*|]+)?(?:\.[0-9xX*|]+)?(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?";
    let space = r"[\t\n\x0C\r ]";
    Regex::new(&format!(
        "{space}*({version}){space}+-{space}+({version}){space}*"
    ))
    .ok()
});

/// Rewrites every hyphen range `A - B` into `>= A, <= B ` the way
/// Masterminds does: matches are found in the original text, and each is
/// replaced at the first place its text occurs in the string rewritten so
/// far.
fn rewrite_hyphen_ranges(text: &str) -> Result<Cow<'_, str>, RangeError> {
    let re = HYPHEN_RANGE.as_ref().ok_or_else(|| {
        RangeError::new("internal error: the hyphen-range pattern does not compile")
    })?;
    let mut out = Cow::Borrowed(text);
    for caps in re.captures_iter(text) {
        let (Some(whole), Some(lower), Some(upper)) = (caps.get(0), caps.get(1), caps.get(2))
        else {
            continue;
        };
        let replacement = format!(">= {}, <= {} ", lower.as_str(), upper.as_str());
        if let Some(at) = out.find(whole.as_str()) {
            let mut next = String::with_capacity(out.len() + 8);
            next.push_str(&out[..at]);
            next.push_str(&replacement);
            next.push_str(&out[at + whole.len()..]);
            out = Cow::Owned(next);
        }
    }
    Ok(out)
}

/// Byte cursor over one OR segment.
struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) -> usize {
        let start = self.pos;
        while self.peek().is_some_and(is_go_space) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn eat(&mut self, s: &str) -> bool {
        if self.text.as_bytes()[self.pos..].starts_with(s.as_bytes()) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn take_while(&mut self, pred: impl Fn(u8) -> bool) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(&pred) {
            self.pos += 1;
        }
        &self.text[start..self.pos]
    }

    /// The rest of the segment from the cursor, for messages.
    fn rest(&self) -> &'a str {
        self.text[self.pos..].trim_end()
    }

    fn op(&mut self) -> Op {
        // Longest operators first so that `>=` is not read as `>`. A shorter
        // reading would leave an operator character where the version must
        // start, so the longest one is the only reading that can succeed.
        const OPS: [(&str, Op); 11] = [
            ("!=", Op::NotEqual),
            (">=", Op::GreaterEqual),
            ("=>", Op::GreaterEqual),
            ("<=", Op::LessEqual),
            ("=<", Op::LessEqual),
            ("~>", Op::Tilde),
            (">", Op::Greater),
            ("<", Op::Less),
            ("=", Op::Equal),
            ("~", Op::Tilde),
            ("^", Op::Caret),
        ];
        for (token, op) in OPS {
            if self.eat(token) {
                return op;
            }
        }
        Op::Equal
    }

    /// Reads a version greedily, the way Masterminds' version pattern does:
    /// `v?` then up to three dot-separated parts of `[0-9xX*|]`, then an
    /// optional `-prerelease` and `+build`. Part validity is checked later.
    /// Greedy is exact here: whatever could follow a shorter reading is
    /// neither whitespace nor a comma, so only the longest can be valid.
    fn loose_version(&mut self) -> Option<LooseVersion<'a>> {
        let ident_char = |b: u8| b.is_ascii_alphanumeric() || b == b'-';
        let start = self.pos;
        let _ = self.eat("v");
        let first = self.take_while(is_part_char);
        if first.is_empty() {
            self.pos = start;
            return None;
        }
        let mut parts = vec![first];
        while parts.len() < 3 {
            let bytes = self.text.as_bytes();
            let dot_then_part = bytes.get(self.pos) == Some(&b'.')
                && bytes.get(self.pos + 1).is_some_and(|&b| is_part_char(b));
            if !dot_then_part {
                break;
            }
            self.pos += 1;
            parts.push(self.take_while(is_part_char));
        }
        let mut pre = "";
        for marker in [b'-', b'+'] {
            let bytes = self.text.as_bytes();
            if bytes.get(self.pos) == Some(&marker)
                && bytes.get(self.pos + 1).is_some_and(|&b| ident_char(b))
            {
                self.pos += 1;
                let ids_start = self.pos;
                loop {
                    self.take_while(ident_char);
                    let bytes = self.text.as_bytes();
                    if bytes.get(self.pos) == Some(&b'.')
                        && bytes.get(self.pos + 1).is_some_and(|&b| ident_char(b))
                    {
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
                if marker == b'-' {
                    pre = &self.text[ids_start..self.pos];
                }
                // Build metadata never affects matching, so it is dropped.
            }
        }
        Some(LooseVersion { parts, pre })
    }
}

/// Parses one AND group (after hyphen ranges were rewritten): constraints
/// separated by whitespace or by one comma with optional whitespace around
/// it, with optional whitespace at both ends.
fn parse_and_group(segment: &str) -> Result<Vec<Comparator>, RangeError> {
    let mut cur = Cursor {
        text: segment,
        pos: 0,
    };
    let mut out = Vec::new();
    cur.skip_ws();
    if cur.peek().is_none() {
        return Err(RangeError::new("empty alternative around `||`"));
    }
    loop {
        let start = cur.pos;
        let op = cur.op();
        cur.skip_ws();
        let at = cur.pos;
        let version = cur.loose_version().ok_or_else(|| {
            RangeError::new(format!("expected a version at '{}'", &segment[at..]))
        })?;
        out.push(resolve(op, &version)?);
        let written = &segment[start..cur.pos];
        let spaced = cur.skip_ws() > 0;
        match cur.peek() {
            None => break,
            Some(b',') => {
                cur.pos += 1;
                cur.skip_ws();
                if cur.peek().is_none() {
                    return Err(RangeError::new(format!(
                        "'{}' ends with a comma; a constraint must follow it",
                        segment.trim()
                    )));
                }
            }
            Some(_) if spaced => {}
            Some(_) => {
                return Err(RangeError::new(format!(
                    "'{written}' is directly followed by '{}': constraints must be separated by a space or a comma",
                    cur.rest()
                )));
            }
        }
    }
    Ok(out)
}

/// Turns a loosely written version into a concrete one plus dirty flags,
/// filling missing or wildcard parts with zero.
fn resolve(op: Op, v: &LooseVersion<'_>) -> Result<Comparator, RangeError> {
    let num = |part: &str| -> Result<u64, RangeError> {
        if part.bytes().all(|b| b.is_ascii_digit()) {
            part.parse::<u64>()
                .map_err(|_| RangeError::new(format!("version part '{part}' is too large")))
        } else {
            Err(RangeError::new(format!("invalid version part '{part}'")))
        }
    };
    // As in Masterminds, only the parts before the first wildcard are read
    // as numbers: `1.x.1x` is `1.x`, and `x.|` is `*`.
    let major = v.parts.first().copied().unwrap_or("*");
    let minor = v.parts.get(1).copied();
    let patch = v.parts.get(2).copied();
    let (numbers, dirty, minor_dirty, patch_dirty) = if is_wildcard(major) {
        ((0, 0, 0), true, false, false)
    } else if minor.is_none_or(is_wildcard) {
        ((num(major)?, 0, 0), true, true, false)
    } else if patch.is_none_or(is_wildcard) {
        (
            (num(major)?, num(minor.unwrap_or("0"))?, 0),
            true,
            false,
            true,
        )
    } else {
        (
            (
                num(major)?,
                num(minor.unwrap_or("0"))?,
                num(patch.unwrap_or("0"))?,
            ),
            false,
            false,
            false,
        )
    };
    let pre = if v.pre.is_empty() {
        Prerelease::EMPTY
    } else {
        Prerelease::new(v.pre)
            .map_err(|e| RangeError::new(format!("invalid prerelease '{}': {e}", v.pre)))?
    };
    let mut version = Version::new(numbers.0, numbers.1, numbers.2);
    version.pre = pre;
    Ok(Comparator {
        op,
        version,
        dirty,
        minor_dirty,
        patch_dirty,
    })
}

impl Comparator {
    fn matches(&self, v: &Version) -> bool {
        let c = &self.version;
        let cmp = v.cmp_precedence(c);
        match self.op {
            Op::Equal => {
                if self.dirty {
                    self.tilde(v)
                } else {
                    cmp == Ordering::Equal
                }
            }
            Op::NotEqual => self.not_equal(v),
            Op::Greater => {
                if !self.dirty {
                    return cmp == Ordering::Greater;
                }
                match v.major.cmp(&c.major) {
                    Ordering::Greater => true,
                    Ordering::Less => false,
                    Ordering::Equal if self.minor_dirty => false,
                    Ordering::Equal if self.patch_dirty => v.minor > c.minor,
                    Ordering::Equal => cmp == Ordering::Greater,
                }
            }
            Op::Less => cmp == Ordering::Less,
            Op::GreaterEqual => cmp != Ordering::Less,
            Op::LessEqual => {
                if !self.dirty {
                    return cmp != Ordering::Greater;
                }
                if v.major > c.major {
                    false
                } else {
                    !(v.major == c.major && v.minor > c.minor && !self.minor_dirty)
                }
            }
            Op::Tilde => self.tilde(v),
            Op::Caret => self.caret(v, cmp),
        }
    }

    fn not_equal(&self, v: &Version) -> bool {
        let c = &self.version;
        if self.dirty {
            if v.major != c.major {
                return true;
            }
            if self.minor_dirty {
                return false;
            }
            if v.minor != c.minor {
                return true;
            }
            if self.patch_dirty {
                // `!=1.2.x` excludes every 1.2.*; with prereleases involved
                // only an equal prerelease counts as "the same".
                if !v.pre.is_empty() || !c.pre.is_empty() {
                    return v.pre != c.pre;
                }
                return false;
            }
        }
        v.cmp_precedence(c) != Ordering::Equal
    }

    fn tilde(&self, v: &Version) -> bool {
        let c = &self.version;
        if v.cmp_precedence(c) == Ordering::Less {
            return false;
        }
        // `~0.0.0`, `~*`: everything at or above zero.
        if c.major == 0 && c.minor == 0 && c.patch == 0 && !self.minor_dirty && !self.patch_dirty {
            return true;
        }
        if v.major != c.major {
            return false;
        }
        self.minor_dirty || v.minor == c.minor
    }

    fn caret(&self, v: &Version, cmp: Ordering) -> bool {
        let c = &self.version;
        if cmp == Ordering::Less {
            return false;
        }
        // Major above zero (or `^0`, `^1.x`): stay within the major.
        if c.major > 0 || self.minor_dirty {
            return v.major == c.major;
        }
        if v.major > 0 {
            return false;
        }
        // `^0.y.z` with y > 0, or `^0.0`: stay within the minor.
        if c.minor > 0 || self.patch_dirty {
            return v.minor == c.minor;
        }
        if v.minor > 0 {
            return false;
        }
        // `^0.0.z`: exactly that patch.
        v.patch == c.patch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        parse_tag(s).unwrap_or_else(|| panic!("test version {s} must parse"))
    }

    fn check(range: &str, version: &str) -> bool {
        Range::parse(range)
            .unwrap_or_else(|e| panic!("range {range:?}: {e}"))
            .matches(&v(version))
    }

    #[test]
    fn tag_parsing_follows_flux_strictness() {
        for ok in [
            "v1.2.3",
            "v1.2.0-x.Y.0+metadata",
            "v1.2.0-x.Y.0+metadata-width-hypen",
            "v1.2.3-rc1-with-hypen",
            "0.0.0",
            "10.20.30-alpha.1+build.007",
        ] {
            assert!(parse_tag(ok).is_some(), "{ok} should parse");
        }
        for bad in [
            "v1.0",
            "v1",
            "v1.2.beta",
            "v1.2-5",
            "v1.2-beta.5",
            "\nv1.2",
            "v1.2.3.4",
            "1.0",
            "1.0.0.1",
            "1.0.0p",
            "01.2.3",
            "V1.2.3",
            "vv1.2.3",
            "latest",
            "b1.2.3",
            "1.2.3-01",
            "1.2.3-",
            "1.2.3+",
            " 1.2.3",
            "1.2.3 ",
        ] {
            assert!(parse_tag(bad).is_none(), "{bad:?} should not parse");
        }
    }

    #[test]
    fn flux_new_semver_validity() {
        for ok in [
            "1.0.x",
            "^1.0",
            "=1.0.0",
            "~1.0",
            ">=1.0",
            ">0,<2.0",
            "v1.0.x",
            ">=0.x",
            "1.x",
            "^1.x-0",
            ">=v0.0.1-0",
            "*",
            "x",
            "X",
            ">= 1.2",
            ">=1,<2",
            ">=1.0, <2.0",
            ">=1.0 <2.0",
            "1.2 - 1.4.5",
            "1.0.0-0 - 2.0.0",
            "~> 1.2",
            "=< 1.2",
            "1.2.3+build",
        ] {
            assert!(Range::parse(ok).is_ok(), "{ok:?} should be valid");
        }
        for bad in [
            "",
            "1.0.0p",
            "1x",
            "x1",
            "-1",
            "a",
            "*-*",
            "latest",
            " ",
            "1.0 ||",
            "|| 1.0",
            ">=",
            ">>1",
            "1.2 -1.4",
            ">=1.2 - 1.4",
            "1..2",
            "1.2.3.4",
            "1.2.3-01",
            "xx",
            ">=1,,<2",
            ",>=1",
        ] {
            assert!(Range::parse(bad).is_err(), "{bad:?} should be invalid");
        }
    }

    /// Masterminds v3.2+ (Flux uses v3.5) requires a space or a comma
    /// between constraints; earlier versions read `1.2.3<2` as an AND. The
    /// verdicts were checked against Masterminds v3.4.0 itself.
    #[test]
    fn constraints_need_a_separator() {
        let table: &[(&str, bool)] = &[
            // Written back to back: invalid.
            ("1.2.3<2", false),
            (">1.0<2.0", false),
            ("1.x>=1.2", false),
            ("1.2.3~1.2.3", false),
            (">1.0!=1.5.0", false),
            ("12.3.34~ 1.2.3", false),
            ("1.2.3^2", false),
            ("~1.2||^2<3", false),
            // The valid neighbours.
            (">1.0 <2.0", true),
            (">1.0, <2.0", true),
            (">1.0 , <2.0", true),
            (">1.0,<2.0", true),
            (">1.0\t<2.0", true),
            ("1.2.3 - 2", true),
            ("~1.2 || ^2", true),
            ("~1.2||^2", true),
            ("12.3.34 ~1.2.3", true),
            ("1.0.0 - 2.0.0, <=2.0.0", true),
            ("3 - 4 || => 3.0, < 4", true),
            // One comma, never at either end.
            (">=1.0,", false),
            (",>=1.0", false),
            (">=1.0,,<2", false),
            (">=1.0 ,", false),
            // Hyphen ranges are rewritten on the whole string first, leading
            // whitespace included, so an operator before them needs a comma.
            (">1 2 - 3", false),
            (">1, 2 - 3", true),
            ("1 - 2 3 - 4", true),
            ("1 - 2 - 3", false),
            // Parts after a wildcard are never read as numbers.
            ("1.x.1x", true),
            ("x.|", true),
            ("1.2.x|", false),
            ("1.x|", false),
        ];
        for &(range, valid) in table {
            assert_eq!(
                Range::parse(range).is_ok(),
                valid,
                "{range:?} should be {}",
                if valid { "valid" } else { "invalid" }
            );
        }
    }

    #[test]
    fn separator_errors_name_both_constraints() {
        assert_eq!(
            Range::parse(">1.0<2.0").unwrap_err().to_string(),
            "improper constraint: '>1.0' is directly followed by '<2.0': constraints must be \
             separated by a space or a comma"
        );
        assert_eq!(
            Range::parse(">=1.0, <2,").unwrap_err().to_string(),
            "improper constraint: '>=1.0, <2,' ends with a comma; a constraint must follow it"
        );
        assert_eq!(
            Range::parse(">1 2 - 3").unwrap_err().to_string(),
            "improper constraint: '>1' is directly followed by '>= 2, <= 3': constraints must be \
             separated by a space or a comma (after reading hyphen ranges, the range is \
             '>1>= 2, <= 3')"
        );
    }

    #[test]
    fn hyphen_ranges_across_alternatives() {
        // `|` is a version character for the hyphen rewrite, which runs
        // before the `||` split: `1||2 - 3` is `>=1 || 2, <=3`, unlike
        // `1 || 2 - 3` (checked against Masterminds v3.4.0).
        assert!(check("1||2 - 3", "5.0.0"));
        assert!(!check("1||2 - 3", "0.5.0"));
        assert!(!check("1 || 2 - 3", "5.0.0"));
        assert!(check("1 - 2 3 - 4", "2.0.0") == check(">=1 <=2 >=3 <=4", "2.0.0"));
        assert!(check("1 - 2 || 3 - 4", "3.5.0"));
    }

    /// The 55 vectors of crates.md §3, as (range, version, expected).
    #[test]
    fn masterminds_vectors() {
        let table: &[(&str, &str, bool)] = &[
            (">=1.0.0 <2.0.0", "1.5.0", true),
            (">=1.0.0 <2.0.0", "2.0.0", false),
            (">=1.0.0 <2.0.0", "1.5.0-rc.1", false),
            (">=1.0.0,<2.0.0", "1.5.0", true),
            ("^1.2", "1.9.9", true),
            ("^1.2", "2.0.0", false),
            ("^1.2", "1.1.9", false),
            ("~1.2", "1.2.5", true),
            ("~1.2", "1.3.0", false),
            ("1.x", "1.9.0", true),
            ("1.x", "2.0.0", false),
            ("1.2.x", "1.2.9", true),
            ("*", "3.4.5", true),
            ("*", "3.4.5-beta", false),
            (">=1.0.0 <1.2.0 || >=2.0.0", "1.1.0", true),
            (">=1.0.0 <1.2.0 || >=2.0.0", "1.5.0", false),
            (">=1.0.0 <1.2.0 || >=2.0.0", "2.3.0", true),
            ("1.2 - 1.4.5", "1.4.5", true),
            ("1.2 - 1.4.5", "1.4.6", false),
            ("1.2 - 1.4.5", "1.2.0", true),
            ("1.2 - 1.4", "1.4.9", true),
            ("1.2 - 1.4", "1.5.0", false),
            ("v1.2.3", "1.2.3", true),
            ("v1.2.3", "1.2.4", false),
            ("1.2.3", "1.2.4", false),
            (">=v1.0.0", "v1.2.0", true),
            (">=1.0.0-0", "1.5.0-rc.1", true),
            (">=1.0.0-0", "2.0.0-rc.1", true),
            ("^1.2.3-beta.2", "1.2.3-beta.4", true),
            ("^1.2.3-beta.2", "1.3.0-alpha", true),
            ("^0.2.3", "0.2.5", true),
            ("^0.2.3", "0.3.0", false),
            ("^0.0.3", "0.0.3", true),
            ("^0.0.3", "0.0.4", false),
            ("^0.0", "0.0.5", true),
            ("^0.0", "0.1.0", false),
            ("^0", "0.9.0", true),
            ("^0", "1.0.0", false),
            ("~1", "1.9.0", true),
            ("~1", "2.0.0", false),
            ("~1.2.3", "1.2.9", true),
            ("~1.2.3", "1.3.0", false),
            (">1.2", "1.2.5", false),
            (">1.2", "1.3.0", true),
            ("<=1.2", "1.2.9", true),
            ("<=1.2", "1.3.0", false),
            ("!=1.2.3", "1.2.4", true),
            ("!=1.2.3", "1.2.3", false),
            ("=1.2", "1.2.7", true),
            ("~>1.2", "1.2.7", true),
            ("=> 1.0", "1.0.1", true),
        ];
        for &(range, version, want) in table {
            assert_eq!(check(range, version), want, "{range:?} vs {version}");
        }
        // The remaining vectors: "" is an error, and a tag "1.2" is not a
        // candidate at all, whatever the range.
        assert_eq!(
            Range::parse("").unwrap_err().to_string(),
            "improper constraint: empty range"
        );
        assert!(parse_tag("1.2").is_none());
        assert_eq!(table.len() + 2, 53);
    }

    #[test]
    fn semantics_table_from_flux_reference() {
        let table: &[(&str, &[&str], &[&str])] = &[
            ("=1.2.3", &["1.2.3", "1.2.3+b7"], &["1.2.4", "1.2.3-rc.1"]),
            ("1", &["1.0.0", "1.99.3"], &["2.0.0", "0.9.9"]),
            ("1.*", &["1.4.0"], &["2.0.0"]),
            ("=1.x", &["1.4.0"], &["2.0.0"]),
            ("1.2", &["1.2.0", "1.2.99"], &["1.3.0", "1.1.9"]),
            ("x", &["0.0.0", "9.9.9"], &["9.9.9-rc.1"]),
            (">=0.0.0", &["0.0.0", "4.0.0"], &["4.0.0-rc.1"]),
            ("~1.2", &["1.2.0", "1.2.7"], &["1.3.0"]),
            ("~0.0.0", &["0.0.1", "7.0.0"], &[]),
            ("~*", &["0.0.1", "7.0.0"], &[]),
            ("^1.2.3", &["1.2.3", "1.9.0"], &["2.0.0", "1.2.2"]),
            ("^1.x", &["1.0.0", "1.9.0"], &["2.0.0", "0.9.0"]),
            (">1.2.3", &["1.2.4"], &["1.2.3"]),
            (">11", &["12.0.0"], &["11.9.9"]),
            (">11.1", &["11.2.0", "12.0.0"], &["11.1.9"]),
            (">=1.x", &["1.0.0", "5.0.0"], &["0.9.9"]),
            ("<1.x", &["0.9.9"], &["1.0.0"]),
            ("<=1.x", &["1.9.9", "0.1.0"], &["2.0.0"]),
            ("!=1.x", &["0.9.0", "2.0.0"], &["1.0.0", "1.5.5"]),
            ("!=1.2.x", &["1.3.0", "1.1.0"], &["1.2.0", "1.2.9"]),
            ("1.0 - 2.0", &["2.0.7", "1.0.0"], &["2.1.0", "0.9.9"]),
            // `2.0.0-rc.1` precedes `2.0.0`, so `<2.0.0` admits it once the
            // group allows prereleases at all (a known Masterminds surprise).
            (
                ">=1.0.0-0 <2.0.0",
                &["1.5.0-rc.1", "1.0.0-0", "2.0.0-rc.1"],
                &["2.0.0", "0.9.0-rc.1"],
            ),
            ("^1.x-0", &["1.5.0-rc.1", "1.0.0"], &["2.0.0-rc.1"]),
            // The prerelease gate is per AND group: the second group has no
            // prerelease comparator, so it never admits prereleases.
            (
                ">=3.0.0-0 <4.0.0 || >=1.0.0 <2.0.0",
                &["3.1.0-beta", "1.5.0"],
                &["1.5.0-rc.1"],
            ),
        ];
        for &(range, yes, no) in table {
            for version in yes {
                assert!(check(range, version), "{range:?} should match {version}");
            }
            for version in no {
                assert!(
                    !check(range, version),
                    "{range:?} should not match {version}"
                );
            }
        }
    }

    #[test]
    fn prerelease_ordering_is_semver_precedence() {
        // `rc9` > `rc10` compares ASCII, `rc.10` > `rc.9` numerically.
        assert!(v("1.0.0-rc9") > v("1.0.0-rc10"));
        assert!(v("1.0.0-rc.10").cmp_precedence(&v("1.0.0-rc.9")) == Ordering::Greater);
        assert!(v("1.0.0").cmp_precedence(&v("1.0.0-rc.9")) == Ordering::Greater);
        assert!(v("1.0.0-alpha").cmp_precedence(&v("1.0.0-1")) == Ordering::Greater);
        assert!(v("1.0.0+a").cmp_precedence(&v("1.0.0+b")) == Ordering::Equal);
    }

    #[test]
    fn v_prefix_works_both_ways() {
        assert!(check("v1.0.x", "1.0.1"));
        assert!(check("1.0.x", "v1.0.1"));
    }

    proptest::proptest! {
        /// A bare exact version matches itself and nothing with a different
        /// triple, whatever the numbers.
        #[test]
        fn exact_range_matches_only_itself(a in 0u64..50, b in 0u64..50, c in 0u64..50, d in 0u64..50) {
            let range = Range::parse(&format!("{a}.{b}.{c}")).unwrap();
            proptest::prop_assert!(range.matches(&Version::new(a, b, c)));
            proptest::prop_assert_eq!(range.matches(&Version::new(a, b, d)), c == d);
        }

        /// A hyphen range is the same as the explicit `>=, <=` pair.
        #[test]
        fn hyphen_equals_explicit_pair(lo in 0u64..5, hi in 0u64..5, x in 0u64..6, y in 0u64..6, z in 0u64..6) {
            let hyphen = Range::parse(&format!("{lo}.1 - {hi}.2")).unwrap();
            let explicit = Range::parse(&format!(">={lo}.1, <={hi}.2")).unwrap();
            let version = Version::new(x, y, z);
            proptest::prop_assert_eq!(hyphen.matches(&version), explicit.matches(&version));
        }

        /// `^M.m.p` with M > 0 is exactly `>=M.m.p <M+1.0.0`.
        #[test]
        fn caret_is_same_major(maj in 1u64..4, min in 0u64..4, pat in 0u64..4, x in 0u64..6, y in 0u64..6, z in 0u64..6) {
            let caret = Range::parse(&format!("^{maj}.{min}.{pat}")).unwrap();
            let explicit = Range::parse(&format!(">={maj}.{min}.{pat} <{}.0.0", maj + 1)).unwrap();
            let version = Version::new(x, y, z);
            proptest::prop_assert_eq!(caret.matches(&version), explicit.matches(&version));
        }
    }
}
