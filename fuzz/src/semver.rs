//! Target `semver`: Masterminds-style ranges and the matcher.
//!
//! Input: lines. The first two are ranges `A` and `B`; every later line is
//! a tag, read with Flux's strict [`parse_tag`]. Checks that parsing and
//! matching never panic, and that the matcher agrees with itself:
//! * if `A` and `B` parse, so does `A || B`, and a version matches it
//!   exactly when it matches `A` or `B`;
//! * when `A, B` (both without `||`) parses, every version matching both
//!   matches it, and for a release (no prerelease) the converse holds too
//!   (a prerelease may match the joint group only because one side allows
//!   prereleases, Masterminds' group rule);
//! * the comparisons built from a version `w` agree with semver precedence
//!   on releases: `>=w` matches exactly what `<w` does not, `=w` exactly
//!   what `!=w` does not, and `>=w` is `v >= w`.

use ::semver::Version;
use image_update::api::selection::{Range, parse_tag};

/// Run the target on one input.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.split('\n');
    let a_text = lines.next().unwrap_or("");
    let b_text = lines.next().unwrap_or("");
    let versions: Vec<Version> = lines.filter_map(parse_tag).take(64).collect();
    let a = Range::parse(a_text);
    let b = Range::parse(b_text);
    if let Ok(a) = &a {
        assert_eq!(a.as_str(), a_text);
        for v in &versions {
            let again = Range::parse(a.as_str()).is_ok_and(|r| r.matches(v));
            assert_eq!(
                a.matches(v),
                again,
                "{a_text:?} parsed twice disagrees on {v}"
            );
        }
    }
    if let (Ok(a), Ok(b)) = (&a, &b) {
        let either = format!("{a_text} || {b_text}");
        let or = Range::parse(&either);
        assert!(
            or.is_ok(),
            "{a_text:?} and {b_text:?} parse, {either:?} does not: {or:?}"
        );
        if let Ok(or) = &or {
            for v in &versions {
                assert_eq!(
                    or.matches(v),
                    a.matches(v) || b.matches(v),
                    "{v}: {either:?} is not {a_text:?} or {b_text:?}"
                );
            }
        }
        if !a_text.contains("||") && !b_text.contains("||") {
            let both = format!("{a_text}, {b_text}");
            if let Ok(and) = Range::parse(&both) {
                for v in &versions {
                    let separately = a.matches(v) && b.matches(v);
                    if separately || v.pre.is_empty() {
                        assert_eq!(
                            and.matches(v),
                            separately,
                            "{v}: {both:?} is not {a_text:?} and {b_text:?}"
                        );
                    }
                }
            }
        }
    }
    for w in &versions {
        let range = |op: &str| Range::parse(&format!("{op}{w}"));
        let (Ok(ge), Ok(lt), Ok(eq), Ok(ne)) = (range(">="), range("<"), range("="), range("!="))
        else {
            panic!("comparisons with {w} do not parse");
        };
        for v in versions.iter().filter(|v| v.pre.is_empty()) {
            let at_least = v.cmp_precedence(w) != std::cmp::Ordering::Less;
            assert_eq!(ge.matches(v), at_least, "{v} against >={w}");
            assert_eq!(lt.matches(v), !at_least, "{v} against <{w}");
            assert_ne!(eq.matches(v), ne.matches(v), "{v} against ={w} and !={w}");
        }
    }
}
