//! Numerical ordering: tags read as 64-bit floats, the way Flux's numerical
//! policy reads them with Go's `strconv.ParseFloat`.
//!
//! Why a parser of our own: Rust's `f64::from_str` agrees with Go on decimal
//! input (including `1e3`, `+1.5`, `.5`, `Inf`, `Infinity` and `NaN` in any
//! case) and rounds identically, but it does not read Go's hexadecimal floats
//! (`0x1p-2`), it accepts a signed `NaN` that Go refuses, and it returns
//! infinity for `1e400` where Go reports a range error. Flux treats every one
//! of those errors as "not a number", which fails the whole policy, so the
//! differences matter for which repositories work at all.

use std::cmp::Ordering;

/// Parses `text` as Go's `strconv.ParseFloat(text, 64)` would.
///
/// Returns `None` when Go would return an error (syntax or range).
pub(crate) fn parse_go_float(text: &str) -> Option<f64> {
    let (negative, body) = match text.as_bytes().first() {
        Some(b'+') => (false, &text[1..]),
        Some(b'-') => (true, &text[1..]),
        _ => (false, text),
    };
    let signed = |x: f64| if negative { -x } else { x };
    if body.eq_ignore_ascii_case("inf") || body.eq_ignore_ascii_case("infinity") {
        return Some(signed(f64::INFINITY));
    }
    if body.eq_ignore_ascii_case("nan") {
        // Go accepts NaN only without a sign.
        return (body.len() == text.len()).then_some(f64::NAN);
    }
    if body.len() > 2 && (body.starts_with("0x") || body.starts_with("0X")) {
        return parse_hex_float(&body[2..]).map(signed);
    }
    // Decimal form: digits, one optional '.', optional exponent. Checking the
    // alphabet first keeps Rust's extra spellings (e.g. "infinity" inside a
    // longer string) out; Rust's parser then does the exact rounding.
    if body.is_empty()
        || !body
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        || !body.as_bytes()[0].is_ascii_digit() && body.as_bytes()[0] != b'.'
    {
        return None;
    }
    let value: f64 = body.parse().ok()?;
    // Go reports overflow as a range error; Rust saturates to infinity.
    if value.is_infinite() {
        return None;
    }
    Some(signed(value))
}

/// Go hexadecimal float after the `0x` prefix: hex mantissa with an optional
/// point, then a mandatory binary exponent `p±N`. Go also allows `_` between
/// digits when a base prefix is present; we accept and skip underscores.
fn parse_hex_float(text: &str) -> Option<f64> {
    let (mantissa, exponent) = text.split_once(['p', 'P'])?;
    let exponent: i32 = {
        let digits = exponent.strip_prefix('+').unwrap_or(exponent);
        let unsigned = digits.strip_prefix('-').unwrap_or(digits);
        if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
            return None;
        }
        // Clamp absurd exponents; the value is then 0 or out of range anyway.
        digits
            .replace('_', "")
            .parse::<i64>()
            .ok()?
            .clamp(-100_000, 100_000) as i32
    };
    let mut value = 0f64;
    let mut scale = 0i32;
    let mut seen_point = false;
    let mut seen_digit = false;
    for ch in mantissa.chars() {
        match ch {
            '_' => {}
            '.' if !seen_point => seen_point = true,
            _ => {
                let digit = ch.to_digit(16)?;
                seen_digit = true;
                // Mantissas beyond 2^64 lose precision here; Go rounds
                // correctly. Tags this long do not occur in practice.
                value = value * 16.0 + f64::from(digit);
                if seen_point {
                    scale -= 4;
                }
            }
        }
    }
    if !seen_digit {
        return None;
    }
    let result = value * 2f64.powi(exponent + scale);
    result.is_finite().then_some(result)
}

/// Compares two parsed values for ranking in ascending numeric order.
///
/// Go's `>`/`<` never hold for NaN, so in Flux a NaN tag wins or loses
/// depending on where it sits in the list. We give NaN a fixed place instead:
/// it ranks below every number under **both** orders, so it can only win
/// when nothing else is left. `Order::Desc` callers must therefore not simply
/// reverse this comparison; see [`rank`].
pub(crate) fn cmp_asc(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// Ranks `a` against `b` for selection: `Greater` means `a` is better.
/// `ascending` picks the maximum, otherwise the minimum; NaN is always worst.
pub(crate) fn rank(a: f64, b: f64, ascending: bool) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (false, false) if !ascending => cmp_asc(b, a),
        _ => cmp_asc(a, b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_parse_float_accepts() {
        let table: &[(&str, f64)] = &[
            ("0", 0.0),
            ("-5", -5.0),
            ("+5", 5.0),
            ("1.5", 1.5),
            ("1e3", 1000.0),
            ("1E-2", 0.01),
            (".5", 0.5),
            ("5.", 5.0),
            ("0x1p-2", 0.25),
            ("0X1.8P1", 3.0),
            ("-0x10p0", -16.0),
            ("0x_1p4", 16.0),
            ("1606234201", 1_606_234_201.0),
            ("inf", f64::INFINITY),
            ("+Inf", f64::INFINITY),
            ("-Infinity", f64::NEG_INFINITY),
            ("007", 7.0),
        ];
        for &(text, want) in table {
            assert_eq!(parse_go_float(text), Some(want), "{text}");
        }
        assert!(parse_go_float("NaN").is_some_and(f64::is_nan));
        assert!(parse_go_float("nan").is_some_and(f64::is_nan));
    }

    #[test]
    fn go_parse_float_rejects() {
        for text in [
            "",
            "1a",
            "b",
            "latest",
            "1e400",
            "-1e400",
            "0x1",
            "0x",
            "0xp1",
            "+NaN",
            "-nan",
            "1_000",
            "1.2.3",
            "e5",
            "1e",
            " 1",
            "1 ",
            "v1",
            "++1",
            "infinityx",
            "0x1.8",
        ] {
            assert_eq!(parse_go_float(text), None, "{text:?}");
        }
    }

    #[test]
    fn nan_ranks_last_in_both_orders() {
        assert_eq!(rank(f64::NAN, -1e300, true), Ordering::Less);
        assert_eq!(rank(f64::NAN, 1e300, false), Ordering::Less);
        assert_eq!(rank(1.0, f64::NAN, false), Ordering::Greater);
        assert_eq!(rank(1.0, 2.0, false), Ordering::Greater);
        assert_eq!(rank(1.0, 2.0, true), Ordering::Less);
    }

    proptest::proptest! {
        /// Every finite float printed by Rust reads back to the same value.
        #[test]
        fn display_roundtrip(x in proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL | proptest::num::f64::ZERO) {
            proptest::prop_assert_eq!(parse_go_float(&x.to_string()), Some(x));
            proptest::prop_assert_eq!(parse_go_float(&format!("{x:e}")), Some(x));
        }
    }
}
