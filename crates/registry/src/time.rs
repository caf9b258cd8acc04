//! Image creation times: a tiny UTC timestamp with an RFC 3339 parser,
//! shared by the registry client (image config `created`, HTTP dates) and
//! the policy engine (newest-build, `--tags-file`).
//!
//! Why hand-written: the only time arithmetic needed is ordering creation
//! times and reading them from `--tags-file` or an image config's `created`
//! field. That is a fixed format with a fixed
//! calendar, about seventy lines, so a date-time crate would add build time
//! on a shared machine for nothing we use.

use std::fmt;

/// An instant as seconds and nanoseconds since the Unix epoch, UTC.
/// Ordering is chronological.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    secs: i64,
    nanos: u32,
}

/// Why a string is not an RFC 3339 date-time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid RFC 3339 time '{value}': {reason}")]
pub struct TimeError {
    value: String,
    reason: &'static str,
}

impl Timestamp {
    /// Builds a timestamp from Unix seconds and nanoseconds (`nanos` is
    /// clamped to below one second).
    pub fn from_unix(secs: i64, nanos: u32) -> Self {
        Self {
            secs,
            nanos: nanos.min(999_999_999),
        }
    }

    /// Seconds since the Unix epoch.
    pub fn unix_seconds(self) -> i64 {
        self.secs
    }

    /// Nanoseconds past [`Self::unix_seconds`].
    pub fn subsec_nanos(self) -> u32 {
        self.nanos
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`.
    ///
    /// `T` and `Z` may be lower case (RFC 3339 allows it). The fraction may
    /// have any number of digits; digits past nanoseconds are dropped, as Go's
    /// `time.RFC3339Nano` parsing does. Leap seconds (`:60`) are rejected, as
    /// Go rejects them.
    ///
    /// # Errors
    /// [`TimeError`] naming the value and what is wrong with it.
    pub fn parse_rfc3339(value: &str) -> Result<Self, TimeError> {
        let err = |reason| TimeError {
            value: value.to_owned(),
            reason,
        };
        let b = value.as_bytes();
        let digits = |range: std::ops::Range<usize>| -> Result<i64, TimeError> {
            let part = b.get(range).ok_or_else(|| err("too short"))?;
            if !part.iter().all(u8::is_ascii_digit) {
                return Err(err("expected digits"));
            }
            Ok(part
                .iter()
                .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0')))
        };
        let expect = |at: usize, allowed: &[u8]| -> Result<(), TimeError> {
            match b.get(at) {
                Some(c) if allowed.contains(c) => Ok(()),
                _ => Err(err("unexpected separator")),
            }
        };
        let year = digits(0..4)?;
        expect(4, b"-")?;
        let month = digits(5..7)?;
        expect(7, b"-")?;
        let day = digits(8..10)?;
        expect(10, b"Tt")?;
        let hour = digits(11..13)?;
        expect(13, b":")?;
        let minute = digits(14..16)?;
        expect(16, b":")?;
        let second = digits(17..19)?;
        if !(1..=12).contains(&month) {
            return Err(err("month out of range"));
        }
        if day < 1 || day > days_in_month(year, month) {
            return Err(err("day out of range"));
        }
        if hour > 23 || minute > 59 || second > 59 {
            return Err(err("time of day out of range"));
        }
        let mut pos = 19;
        let mut nanos = 0u32;
        if b.get(pos) == Some(&b'.') {
            pos += 1;
            let start = pos;
            while b.get(pos).is_some_and(u8::is_ascii_digit) {
                if pos - start < 9 {
                    nanos = nanos * 10 + u32::from(b[pos] - b'0');
                }
                pos += 1;
            }
            let count = pos - start;
            if count == 0 {
                return Err(err("empty fraction"));
            }
            for _ in count..9 {
                nanos *= 10;
            }
        }
        let offset_secs = match b.get(pos) {
            Some(b'Z' | b'z') if pos + 1 == b.len() => 0,
            Some(&sign @ (b'+' | b'-')) if pos + 6 == b.len() => {
                let oh = digits(pos + 1..pos + 3)?;
                expect(pos + 3, b":")?;
                let om = digits(pos + 4..pos + 6)?;
                if oh > 23 || om > 59 {
                    return Err(err("offset out of range"));
                }
                let off = oh * 3600 + om * 60;
                if sign == b'+' { off } else { -off }
            }
            _ => return Err(err("expected Z or a ±HH:MM offset at the end")),
        };
        let days = days_from_civil(year, month, day);
        let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_secs;
        Ok(Self { secs, nanos })
    }
}

impl Timestamp {
    /// ISO 8601 basic format in UTC, whole seconds: `20240102T030405Z`
    /// (AWS Signature Version 4's `X-Amz-Date`).
    pub(crate) fn basic_format(self) -> String {
        let days = self.secs.div_euclid(86_400);
        let rem = self.secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        format!(
            "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
            rem / 3600,
            rem / 60 % 60,
            rem % 60
        )
    }

    /// The current time (a clock before 1970 reads as the epoch).
    pub(crate) fn now() -> Self {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Self::from_unix(
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_nanos(),
        )
    }
}

impl fmt::Display for Timestamp {
    /// RFC 3339 in UTC, with a fraction only when it is not zero.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.secs.div_euclid(86_400);
        let rem = self.secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        write!(
            f,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
            rem / 3600,
            rem / 60 % 60,
            rem % 60
        )?;
        if self.nanos != 0 {
            let frac = format!("{:09}", self.nanos);
            write!(f, ".{}", frac.trim_end_matches('0'))?;
        }
        f.write_str("Z")
    }
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// well-known era-based formula).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Inverse of [`days_from_civil`].
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse_rfc3339(s).unwrap()
    }

    #[test]
    fn parses_known_instants() {
        assert_eq!(ts("1970-01-01T00:00:00Z").unix_seconds(), 0);
        assert_eq!(ts("2001-09-09T01:46:40Z").unix_seconds(), 1_000_000_000);
        assert_eq!(
            ts("2024-02-29T12:00:00+02:00").unix_seconds(),
            1_709_200_800
        );
        assert_eq!(ts("2024-02-29t10:00:00z"), ts("2024-02-29T12:00:00+02:00"));
        assert_eq!(ts("1969-12-31T23:59:59Z").unix_seconds(), -1);
        assert_eq!(
            ts("2020-01-01T00:00:00.5Z"),
            Timestamp::from_unix(1_577_836_800, 500_000_000)
        );
        assert_eq!(
            ts("2020-01-01T00:00:00.1234567891Z"),
            Timestamp::from_unix(1_577_836_800, 123_456_789)
        );
        assert!(ts("2020-01-01T00:00:00.000000001Z") > ts("2020-01-01T00:00:00Z"));
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            "2024-01-01",
            "2024-01-01T00:00:00",
            "2024-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-01-32T00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:00:60Z",
            "2024-01-01 00:00:00Z",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T00:00:00+0100",
            "2024-01-01T00:00:00Zjunk",
            "24-01-01T00:00:00Z",
            "2024-1-01T00:00:00Z",
        ] {
            assert!(Timestamp::parse_rfc3339(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn display_is_utc_rfc3339() {
        assert_eq!(
            ts("2024-02-29T12:00:00+02:00").to_string(),
            "2024-02-29T10:00:00Z"
        );
        assert_eq!(
            ts("1900-03-01T00:00:00.250Z").to_string(),
            "1900-03-01T00:00:00.25Z"
        );
    }

    proptest::proptest! {
        #[test]
        fn display_parse_roundtrip(secs in -5_000_000_000i64..5_000_000_000, nanos in 0u32..1_000_000_000) {
            let t = Timestamp::from_unix(secs, nanos);
            proptest::prop_assert_eq!(ts(&t.to_string()), t);
        }
    }

    #[test]
    fn offsets_fractions_and_garbage_from_registry_configs() {
        assert_eq!(
            ts("2023-06-01T02:00:00+02:00").to_string(),
            "2023-06-01T00:00:00Z"
        );
        assert_eq!(
            ts("2023-06-01T00:00:00.5-01:30").to_string(),
            "2023-06-01T01:30:00.5Z"
        );
        assert_eq!(
            ts("2024-02-29T12:34:56.123456789Z").to_string(),
            "2024-02-29T12:34:56.123456789Z"
        );
        assert_eq!(
            ts("2024-02-29T12:34:56.123456789Z").subsec_nanos(),
            123_456_789
        );
        for bad in [
            "",
            "invalid",
            "2023-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2023-01-01T00:00:00",
            "2023-01-01T25:00:00Z",
            "2023-01-01T00:00:00.Z",
            "2023-01-01T00:00:00+0100",
        ] {
            assert!(Timestamp::parse_rfc3339(bad).is_err(), "{bad}");
        }
    }
}
