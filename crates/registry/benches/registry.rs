//! Tag-listing benchmark: our client against `skopeo list-tags`.
//!
//! Starts Debian's `docker-registry` on 127.0.0.1 (filesystem storage in a
//! temp dir), pushes one tiny image and re-PUTs its manifest under 10,000
//! tags, then times listing all tags with `RegistryClient::fetch_tags`
//! (a fresh client each run, so the `/v2/` ping is included) and with
//! `skopeo list-tags --tls-verify=false docker://127.0.0.1:PORT/bench/app`
//! (a process per run), several runs each, and prints the medians.
//!
//! Run: `cargo bench --bench registry` (env `BENCH_TAGS`, `BENCH_RUNS` override the defaults).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use image_update_testkit::registry as harness;

use std::process::Command;
use std::time::{Duration, Instant};

use harness::{Auth, ImageSpec, Registry, many_tags};
use image_update_registry::{ClientSettings, RegistryClient, Repository};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let n: usize = std::env::var("BENCH_TAGS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let skopeo = Command::new("skopeo").arg("--version").output();
    let Ok(skopeo_version) = skopeo else {
        eprintln!("SKIPPED: skopeo is not installed (apt-get install skopeo)");
        return;
    };
    if image_update_testkit::find_program("docker-registry").is_none() {
        eprintln!("docker-registry is not installed (apt-get install docker-registry)");
        return;
    }
    let reg = Registry::start(Auth::Anonymous);
    let spec = ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z");
    let (manifest, _) = reg.push_image("bench/app", "seed", &spec);
    let tags = many_tags(n);
    let push_start = Instant::now();
    reg.push_tags("bench/app", spec.media_type(), &manifest, &tags);
    let push_time = push_start.elapsed();
    let expected = n + 1;
    println!(
        "pushed {n} tags in {:.1} s ({})",
        push_time.as_secs_f64(),
        String::from_utf8_lossy(&skopeo_version.stdout).trim()
    );

    let repo = Repository::parse(&format!("{}/bench/app", reg.authority())).unwrap();
    let url = format!("docker://{}/bench/app", reg.authority());
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    // One warm-up of each (page cache, connection setup in the registry).
    let warm = RegistryClient::new(ClientSettings::default())
        .unwrap()
        .fetch_tags(&repo)
        .unwrap();
    assert_eq!(warm.len(), expected);
    for _ in 0..runs {
        let start = Instant::now();
        let client = RegistryClient::new(ClientSettings::default()).unwrap();
        let listed = client.fetch_tags(&repo).unwrap();
        ours.push(start.elapsed());
        assert_eq!(listed.len(), expected);

        let start = Instant::now();
        let out = Command::new("skopeo")
            .args(["list-tags", "--tls-verify=false", &url])
            .output()
            .unwrap();
        theirs.push(start.elapsed());
        assert!(
            out.status.success(),
            "skopeo: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let parsed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(parsed["Tags"].as_array().unwrap().len(), expected);
    }
    // skopeo's process start-up alone, to read its figure fairly.
    let startup: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            Command::new("skopeo").arg("--version").output().unwrap();
            start.elapsed()
        })
        .collect();
    let (o, t) = (median(ours.clone()), median(theirs.clone()));
    println!("tags listed per run: {expected}, runs: {runs}");
    println!(
        "image-update RegistryClient::fetch_tags  median {}  (all: {})",
        ms(o),
        ours.iter().map(|d| ms(*d)).collect::<Vec<_>>().join(", ")
    );
    println!(
        "skopeo list-tags --tls-verify=false      median {}  (all: {})",
        ms(t),
        theirs.iter().map(|d| ms(*d)).collect::<Vec<_>>().join(", ")
    );
    println!(
        "skopeo --version (process start only)   median {}",
        ms(median(startup))
    );
    println!(
        "ratio ours/skopeo: {:.2}",
        o.as_secs_f64() / t.as_secs_f64()
    );
}
