//! What the process benchmarks share: their settings from the environment, the
//! `median (min to max)` summary, checked runs, the machine's load.
#![allow(dead_code)] // each benchmark uses some of it

use std::process::Output;
use std::time::Duration;

pub fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}={v} is not a number"))
        })
        .unwrap_or(default)
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `median (min to max)` of `runs`, in ms.
pub fn summary(runs: &[Duration]) -> (f64, String) {
    let mut sorted = runs.to_vec();
    sorted.sort();
    let median = ms(sorted[sorted.len() / 2]);
    (
        median,
        format!(
            "{median:.1} ms ({:.1} to {:.1} ms)",
            ms(sorted[0]),
            ms(sorted[sorted.len() - 1])
        ),
    )
}

pub fn checked(what: &str, out: std::io::Result<Output>) -> Output {
    let out = out.unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The load average (1, 5 and 15 minutes), as `/proc/loadavg` says it.
pub fn load() -> String {
    fs_err::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
