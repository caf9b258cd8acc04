//! Tag-selection benchmark: 100,000 generated tags through both selection
//! steps (filter + choose, top 10), reported as best and median of several
//! runs. Run with `cargo bench --bench policy`.
//!
//! A plain `main` with `std::time::Instant` keeps the dev-dependency set
//! small; the numbers only need to show we are well inside the 50 ms target.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use image_update::api::selection::{
    FilterTagsConfig, LookupError, NoCreatedTimes, Order, PolicyConfig, PolicySpec, Strategy,
    Timestamp,
};

const TAGS: usize = 100_000;
const RUNS: usize = 21;

/// Deterministic 64-bit LCG (Knuth's MMIX constants); no `rand` needed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A realistic mixed repository: mostly semver releases (some with `v`,
/// some prereleases, some build metadata), plus CI tags, signatures and
/// `latest`-style names.
fn mixed_tags(seed: u64) -> Vec<String> {
    let mut rng = Lcg(seed);
    let mut out = Vec::with_capacity(TAGS);
    while out.len() < TAGS {
        let (a, b, c) = (rng.below(8), rng.below(40), rng.below(200));
        let tag = match rng.below(20) {
            0..=9 => format!("{a}.{b}.{c}"),
            10..=12 => format!("v{a}.{b}.{c}"),
            13 => format!("{a}.{b}.{c}-rc.{}", rng.below(9)),
            14 => format!("{a}.{b}.{c}+build.{}", rng.below(999)),
            15 => format!("sha256-{:016x}.sig", rng.next()),
            16 => format!(
                "main-{}-{:07x}",
                1_600_000_000 + rng.below(100_000_000),
                rng.below(1 << 28)
            ),
            17 => format!("pr-{}", rng.below(100_000)),
            18 => format!("{a}.{b}"),
            _ => format!("{a}.{b}.{c}-alpine"),
        };
        out.push(tag);
    }
    out
}

/// CI-style repository: `main-<unix time>-<sha>` builds plus noise.
fn ci_tags(seed: u64) -> Vec<String> {
    let mut rng = Lcg(seed);
    (0..TAGS)
        .map(|_| match rng.below(10) {
            0..=6 => format!(
                "main-{}-{:07x}",
                1_600_000_000 + rng.below(100_000_000),
                rng.below(1 << 28)
            ),
            7 => format!("pr-{}-{:07x}", rng.below(10_000), rng.below(1 << 28)),
            8 => format!("sha256-{:016x}.sig", rng.next()),
            _ => format!("{}.{}.{}", rng.below(5), rng.below(30), rng.below(100)),
        })
        .collect()
}

struct Case {
    name: &'static str,
    spec: PolicySpec,
    tags: Vec<String>,
    times: Option<Vec<Timestamp>>,
}

type BoxError = Box<dyn std::error::Error>;

fn run(case: &Case) -> Result<(Duration, Duration, String), BoxError> {
    let mut samples = Vec::with_capacity(RUNS);
    let mut winner = String::new();
    // The creation-time cache a registry client would hold; built outside
    // the timed region because fetching times is the caller's cost.
    let index: HashMap<&str, Timestamp> = match &case.times {
        Some(times) => case
            .tags
            .iter()
            .map(String::as_str)
            .zip(times.iter().copied())
            .collect(),
        None => HashMap::new(),
    };
    let mut lookup =
        |tag: &str| -> Result<Option<Timestamp>, LookupError> { Ok(index.get(tag).copied()) };
    for _ in 0..RUNS {
        let start = Instant::now();
        let filtered = case
            .spec
            .filter_tags(case.tags.iter().map(String::as_str))?;
        let selection = if case.times.is_some() {
            case.spec.choose(filtered, &mut lookup, 10)?
        } else {
            case.spec.choose(filtered, &mut NoCreatedTimes, 10)?
        };
        samples.push(start.elapsed());
        winner = black_box(selection).tag;
    }
    samples.sort();
    Ok((samples[0], samples[RUNS / 2], winner))
}

fn main() -> Result<(), BoxError> {
    let semver = PolicySpec::new(PolicyConfig::new(Strategy::SemVer {
        range: ">=1.2.0 <5.0.0".into(),
    }))?;
    let mut numerical = PolicyConfig::new(Strategy::Numerical { order: Order::Asc });
    numerical.filter = Some(FilterTagsConfig {
        pattern: r"^main-(?P<ts>\d+)-[0-9a-f]+$".into(),
        extract: "$ts".into(),
    });
    let numerical = PolicySpec::new(numerical)?;
    let alphabetical = PolicySpec::new(PolicyConfig::new(Strategy::Alphabetical {
        order: Order::Asc,
    }))?;
    let mut newest = PolicyConfig::new(Strategy::NewestBuild);
    newest.allow_tags = Some("regexp:^main-".into());
    let newest = PolicySpec::new(newest)?;

    let ci = ci_tags(42);
    let mut rng = Lcg(7);
    let times: Vec<Timestamp> = (0..TAGS)
        .map(|_| Timestamp::from_unix(1_600_000_000 + rng.below(100_000_000) as i64, 0))
        .collect();
    let cases = [
        Case {
            name: "(a) semver >=1.2.0 <5.0.0",
            spec: semver,
            tags: mixed_tags(1),
            times: None,
        },
        Case {
            name: "(b) filterTags $ts + numerical asc",
            spec: numerical,
            tags: ci.clone(),
            times: None,
        },
        Case {
            name: "(c) alphabetical asc",
            spec: alphabetical,
            tags: mixed_tags(2),
            times: None,
        },
        Case {
            name: "(d) allow-tags + newest-build (in-memory times)",
            spec: newest,
            tags: ci,
            times: Some(times),
        },
    ];

    println!("{TAGS} tags per case, {RUNS} runs each (both steps, top 10)\n");
    println!("| case | best | median | winner |");
    println!("|---|---:|---:|---|");
    // `POLICY_BENCH_ONLY=b` runs just the cases whose name contains `(b)`,
    // which is handy under a profiler.
    let only = std::env::var("POLICY_BENCH_ONLY").ok();
    for case in &cases {
        if only
            .as_ref()
            .is_some_and(|o| !case.name.contains(&format!("({o})")))
        {
            continue;
        }
        let (best, median, winner) = run(case)?;
        println!(
            "| {} | {:.2} ms | {:.2} ms | `{winner}` |",
            case.name,
            best.as_secs_f64() * 1e3,
            median.as_secs_f64() * 1e3
        );
    }
    Ok(())
}
