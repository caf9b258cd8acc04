//! An automation's `interval` as a CronJob `schedule`.
//!
//! Cron counts minutes of the hour and hours of the day, so only periods
//! that divide an hour (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30 minutes) or a
//! day (1, 2, 3, 4, 6, 8, 12, 24 hours) repeat evenly. An interval that is
//! one of them is kept exactly; another becomes the longest of them that is
//! not longer (Flux's interval is how often a run is attempted, so running a
//! little more often keeps its promise), and longer than a day becomes daily;
//! both with a note. Under a minute is an error: a CronJob runs at most once
//! a minute.
//!
//! Runs are spread: each automation starts at an offset inside its period
//! taken from a hash of its namespace and name (cron's `M-59/N` steps), so a
//! fleet of automations with the same interval does not hit the git server
//! and the registries in the same second. The offset is stable across runs
//! of `deploy`.

use std::time::Duration;

use sha2::{Digest, Sha256};

/// Periods in minutes that divide an hour.
const MINUTES: [u64; 11] = [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30];
/// Periods in hours that divide a day.
const HOURS: [u64; 8] = [1, 2, 3, 4, 6, 8, 12, 24];

/// A cron schedule for an interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Schedule {
    /// The five cron fields.
    pub cron: String,
    /// The period the schedule repeats with.
    pub period: Duration,
    /// Why it differs from the interval, when it does.
    pub note: Option<String>,
}

/// The schedule for `interval`, offset by `key` (`NAMESPACE/NAME`).
///
/// # Errors
/// An interval under a minute.
pub(crate) fn schedule(interval: Duration, key: &str) -> Result<Schedule, String> {
    let secs = interval.as_secs();
    if secs < 60 {
        return Err(format!(
            "{} is under a minute: a CronJob runs at most once a minute (use 1m or more)",
            crate::create::go_duration(interval)
        ));
    }
    let hash = Sha256::digest(key.as_bytes());
    let seed = u64::from_be_bytes([
        hash[0], hash[1], hash[2], hash[3], hash[4], hash[5], hash[6], hash[7],
    ]);
    let minutes = secs / 60;
    let (period_minutes, cron) = if minutes < 60 {
        let n = MINUTES
            .iter()
            .copied()
            .filter(|m| *m <= minutes)
            .max()
            .unwrap_or(1);
        let cron = if n == 1 {
            "* * * * *".to_owned()
        } else {
            format!("{}-59/{n} * * * *", seed % n)
        };
        (n, cron)
    } else {
        let hours = minutes / 60;
        let n = HOURS
            .iter()
            .copied()
            .filter(|h| *h <= hours)
            .max()
            .unwrap_or(1);
        let minute = seed % 60;
        let cron = match n {
            1 => format!("{minute} * * * *"),
            24 => format!("{minute} {} * * *", (seed / 60) % 24),
            n => format!("{minute} {}-23/{n} * * *", (seed / 60) % n),
        };
        (n * 60, cron)
    };
    let period = Duration::from_secs(period_minutes * 60);
    let note = (period != interval).then(|| {
        format!(
            "runs every {} (the longest period a cron schedule repeats evenly that is not longer than the interval {})",
            crate::create::go_duration(period),
            crate::create::go_duration(interval)
        )
    });
    Ok(Schedule { cron, period, note })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Schedule {
        schedule(Duration::from_secs(secs), "flux-system/apps").unwrap()
    }

    #[test]
    fn exact_periods_are_kept_and_spread() {
        assert_eq!(s(60).cron, "* * * * *");
        assert!(s(60).note.is_none());
        let five = s(300);
        assert!(five.cron.ends_with("-59/5 * * * *"), "{}", five.cron);
        let offset: u64 = five.cron.split('-').next().unwrap().parse().unwrap();
        assert!(offset < 5);
        assert!(five.note.is_none());
        let hourly = s(3600);
        assert!(hourly.cron.ends_with(" * * * *"), "{}", hourly.cron);
        assert!(s(6 * 3600).cron.ends_with("-23/6 * * *"));
        let daily = s(24 * 3600).cron;
        assert_eq!(daily.split(' ').count(), 5);
        assert!(daily.ends_with(" * * *"));
        // Stable, and different for another automation.
        assert_eq!(s(300), s(300));
        let other: Vec<String> = (0..20)
            .map(|i| {
                schedule(Duration::from_secs(1800), &format!("ns/a{i}"))
                    .unwrap()
                    .cron
            })
            .collect();
        assert!(other.iter().any(|c| c != &other[0]), "offsets spread");
    }

    #[test]
    fn other_intervals_round_down_with_a_note() {
        let seven = s(7 * 60);
        assert_eq!(seven.period, Duration::from_secs(360));
        assert!(seven.note.unwrap().starts_with("runs every 6m0s"));
        assert_eq!(s(90 * 60).period, Duration::from_secs(3600));
        assert_eq!(s(48 * 3600).period, Duration::from_secs(24 * 3600));
        assert_eq!(s(61).period, Duration::from_secs(60));
        assert!(
            schedule(Duration::from_secs(30), "a/b")
                .unwrap_err()
                .starts_with("30s is under a minute")
        );
    }
}
