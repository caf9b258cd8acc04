//! RFC 3339 timestamps (image config `created`), without a date-time crate.

use std::fmt;

/// A point in time, UTC, with nanosecond precision. Orders chronologically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    seconds: i64,
    nanos: u32,
}

impl Timestamp {
    pub fn from_unix(seconds: i64, nanos: u32) -> Self {
        Self {
            seconds: seconds + i64::from(nanos / 1_000_000_000),
            nanos: nanos % 1_000_000_000,
        }
    }

    /// Seconds since the Unix epoch.
    pub fn unix_seconds(&self) -> i64 {
        self.seconds
    }

    pub fn subsec_nanos(&self) -> u32 {
        self.nanos
    }

    /// Parse `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)` (also lowercase `t`/`z`
    /// and a space separator, as Go's RFC3339Nano parser accepts).
    pub fn parse_rfc3339(input: &str) -> Option<Self> {
        let b = input.as_bytes();
        if b.len() < 20 {
            return None;
        }
        let num = |from: usize, to: usize| -> Option<i64> {
            let s = input.get(from..to)?;
            if !s.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            s.parse().ok()
        };
        let year = num(0, 4)?;
        let month = num(5, 7)?;
        let day = num(8, 10)?;
        if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
            return None;
        }
        let hour = num(11, 13)?;
        let minute = num(14, 16)?;
        let second = num(17, 19)?;
        if b[13] != b':' || b[16] != b':' {
            return None;
        }
        if !(1..=12).contains(&month)
            || day < 1
            || day > days_in_month(year, month)
            || hour > 23
            || minute > 59
            || second > 60
        {
            return None;
        }
        let mut pos = 19;
        let mut nanos: u32 = 0;
        if b[pos] == b'.' {
            pos += 1;
            let start = pos;
            while pos < b.len() && b[pos].is_ascii_digit() {
                pos += 1;
            }
            let digits = &input[start..pos];
            if digits.is_empty() {
                return None;
            }
            let mut scale = 100_000_000u32;
            for d in digits.bytes().take(9) {
                nanos += u32::from(d - b'0') * scale;
                scale /= 10;
            }
        }
        let offset_seconds = match &input[pos..] {
            "Z" | "z" => 0,
            tz if tz.len() == 6 && (tz.starts_with('+') || tz.starts_with('-')) => {
                if tz.as_bytes()[3] != b':' {
                    return None;
                }
                let h = num(pos + 1, pos + 3)?;
                let m = num(pos + 4, pos + 6)?;
                if h > 23 || m > 59 {
                    return None;
                }
                let off = h * 3600 + m * 60;
                if tz.starts_with('-') { -off } else { off }
            }
            _ => return None,
        };
        let days = days_from_civil(year, month, day);
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_seconds;
        Some(Self { seconds, nanos })
    }
}

impl fmt::Display for Timestamp {
    /// RFC 3339 in UTC, with the fraction only when it is non-zero.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.seconds.div_euclid(86_400);
        let rem = self.seconds.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        write!(
            f,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
            rem / 3600,
            (rem % 3600) / 60,
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
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(y) => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        let t = Timestamp::parse_rfc3339("2024-02-29T12:34:56.123456789Z").unwrap();
        assert_eq!(t.to_string(), "2024-02-29T12:34:56.123456789Z");
        let t = Timestamp::parse_rfc3339("1970-01-01T00:00:00Z").unwrap();
        assert_eq!(t.unix_seconds(), 0);
        let t = Timestamp::parse_rfc3339("2023-06-01T02:00:00+02:00").unwrap();
        assert_eq!(t.to_string(), "2023-06-01T00:00:00Z");
        assert_eq!(
            Timestamp::parse_rfc3339("2023-06-01T00:00:00.5-01:30")
                .unwrap()
                .to_string(),
            "2023-06-01T01:30:00.5Z"
        );
        assert_eq!(
            Timestamp::parse_rfc3339("2001-09-09T01:46:40Z")
                .unwrap()
                .unix_seconds(),
            1_000_000_000
        );
    }

    #[test]
    fn rejects_garbage() {
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
            assert!(Timestamp::parse_rfc3339(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn ordering() {
        let a = Timestamp::parse_rfc3339("2020-01-01T00:00:00Z").unwrap();
        let b = Timestamp::parse_rfc3339("2020-01-01T00:00:00.000000001Z").unwrap();
        assert!(a < b);
        assert_eq!(
            Timestamp::from_unix(-1, 0).to_string(),
            "1969-12-31T23:59:59Z"
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = Timestamp::parse_rfc3339(&s);
        }

        #[test]
        fn round_trips(secs in -62_000_000_000i64..250_000_000_000i64, nanos in 0u32..1_000_000_000) {
            let t = Timestamp::from_unix(secs, nanos);
            proptest::prop_assert_eq!(Timestamp::parse_rfc3339(&t.to_string()), Some(t));
        }
    }
}
