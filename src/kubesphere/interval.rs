//! `spec.fluxcd.interval`: a Kubernetes duration as Flux's CRDs accept it.

use std::time::Duration;

/// A Kubernetes duration as Flux's CRDs accept it: `1m`, `1h30m`, `0.5s`
/// (`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`), with the text as written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Interval {
    /// As written.
    pub text: String,
    /// Its length.
    pub duration: Duration,
}

impl Interval {
    /// Parse a duration; `None` when it is not one.
    #[must_use]
    pub(crate) fn parse(text: &str) -> Option<Interval> {
        let mut rest = text;
        let mut nanos: u128 = 0;
        if rest.is_empty() {
            return None;
        }
        while !rest.is_empty() {
            let digits = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            if digits == 0 {
                return None;
            }
            let (whole, after) = rest.split_at(digits);
            let (fraction, after) = match after.strip_prefix('.') {
                Some(f) => {
                    let n = f.find(|c: char| !c.is_ascii_digit()).unwrap_or(f.len());
                    if n == 0 {
                        return None;
                    }
                    f.split_at(n)
                }
                None => ("", after),
            };
            let (unit, after): (u128, &str) = if let Some(a) = after.strip_prefix("ms") {
                (1_000_000, a)
            } else if let Some(a) = after.strip_prefix('s') {
                (1_000_000_000, a)
            } else if let Some(a) = after.strip_prefix('m') {
                (60_000_000_000, a)
            } else if let Some(a) = after.strip_prefix('h') {
                (3_600_000_000_000, a)
            } else {
                return None;
            };
            let whole: u128 = whole.parse().ok()?;
            let mut part = whole.checked_mul(unit)?;
            if !fraction.is_empty() {
                // At most nanosecond precision, as Go keeps.
                let digits: String = fraction.chars().take(18).collect();
                let scale = 10u128.pow(u32::try_from(digits.len()).ok()?);
                part = part.checked_add(digits.parse::<u128>().ok()?.checked_mul(unit)? / scale)?;
            }
            nanos = nanos.checked_add(part)?;
            rest = after;
        }
        let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
        let sub = u32::try_from(nanos % 1_000_000_000).ok()?;
        Some(Interval {
            text: text.to_owned(),
            duration: Duration::new(secs, sub),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals() {
        let d = |s: &str| Interval::parse(s).map(|i| i.duration);
        assert_eq!(d("1m"), Some(Duration::from_secs(60)));
        assert_eq!(d("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(d("0.5s"), Some(Duration::from_millis(500)));
        assert_eq!(d("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(d("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(d("10m10s"), Some(Duration::from_secs(610)));
        for bad in [
            "", "1", "m", "1 minute", "5d", "1.m", ".5s", "-1m", "1mm", "1m ",
        ] {
            assert_eq!(d(bad), None, "{bad:?}");
        }
    }
}
