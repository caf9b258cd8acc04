//! Tag-listing benchmark: `image-update policy` against `skopeo list-tags`,
//! process against process, on the same protocol path.
//!
//! Starts Debian's `docker-registry` on 127.0.0.1 **over TLS** (a test CA
//! from `image_update_testkit`), pushes one tiny image and re-PUTs its
//! manifest under `BENCH_TAGS` (10,000) more tags, then alternates, after
//! one warm-up of each, `BENCH_RUNS` (11) runs of:
//!
//! * `image-update policy 127.0.0.1:PORT/bench/app --semver '*' --output
//!   json`, trusting the test CA through `--registry-config` (`ca_file`);
//! * `skopeo list-tags --cert-dir DIR docker://127.0.0.1:PORT/bench/app`,
//!   trusting the same CA (`DIR/ca.crt`).
//!
//! Both are one process per run, both verify the registry's certificate
//! (skopeo pings HTTPS first, and here HTTPS is what answers, so neither
//! tries a second protocol), both send the `/v2/` ping and then read the
//! whole tag list (distribution 2.8 answers in one page). The image-update
//! side also selects a tag from the 10,001 and prints a small JSON report;
//! skopeo prints all 10,001 tags as JSON. Each run's output is checked.
//! `HOME` is an empty directory for both (no credentials, no caches).
//!
//! A third, in-process row times `RegistryClient::fetch_tags` (a fresh
//! client each run, the ping included) over the same TLS connection setup:
//! the library's own cost, without process start-up.
//!
//! Run: `cargo bench --bench registry` (needs Debian's `docker-registry`
//! and `skopeo`; it fails, naming them, when they are missing).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // benchmark code

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use image_update_registry::{ClientSettings, RegistryClient, Repository};
use image_update_testkit::registry::{Auth, ImageSpec, Registry, TestCa, many_tags};

const BIN: &str = env!("CARGO_BIN_EXE_image-update");

#[path = "common/measure.rs"]
mod measure;

use measure::{checked, env_number, summary};

fn main() {
    let missing = image_update_testkit::missing(&["docker-registry", "skopeo"]);
    assert!(
        missing.is_empty(),
        "the registry benchmark needs {} (apt-get install docker-registry skopeo)",
        missing.join(" and ")
    );
    let n = env_number("BENCH_TAGS", 10_000);
    let runs = env_number("BENCH_RUNS", 11);
    let skopeo_version = checked(
        "skopeo --version",
        Command::new("skopeo").arg("--version").output(),
    );

    let ca = TestCa::new();
    let reg = Registry::start_with(Auth::Anonymous, Some(&ca));
    let spec = ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z");
    let (manifest, _) = reg.push_image("bench/app", "seed", &spec);
    let push_start = Instant::now();
    reg.push_tags("bench/app", spec.media_type(), &manifest, &many_tags(n));
    let expected = n + 1;
    println!(
        "pushed {n} tags in {:.1} s; {}",
        push_start.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&skopeo_version.stdout).trim()
    );

    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    let cert_dir = work.path().join("certs");
    fs_err::create_dir_all(&home).unwrap();
    fs_err::create_dir_all(&cert_dir).unwrap();
    let ca_file = cert_dir.join("ca.crt");
    fs_err::write(&ca_file, &ca.ca_pem).unwrap();
    let settings_file = work.path().join("registries.yaml");
    let authority = reg.authority();
    fs_err::write(
        &settings_file,
        format!(
            "registries:\n  '{authority}':\n    insecure: false\n    ca_file: {}\n",
            ca_file.display()
        ),
    )
    .unwrap();
    let image = format!("{authority}/bench/app");

    let ours = || {
        let out = checked(
            "image-update policy",
            Command::new(BIN)
                .env("HOME", &home)
                .args(["policy", &image, "--semver", "*", "--output", "json"])
                .arg("--registry-config")
                .arg(&settings_file)
                .output(),
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["listed"], expected, "{report}");
    };
    let theirs = || {
        let out = checked(
            "skopeo list-tags",
            Command::new("skopeo")
                .env("HOME", &home)
                .arg("list-tags")
                .arg("--cert-dir")
                .arg(&cert_dir)
                .arg(format!("docker://{image}"))
                .output(),
        );
        let parsed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(parsed["Tags"].as_array().unwrap().len(), expected);
    };
    let repo = Repository::parse(&image).unwrap();
    let library_settings =
        ClientSettings::from_env_and_file(Some(Path::new(&settings_file))).unwrap();
    let library = || {
        let client = RegistryClient::new(library_settings.clone()).unwrap();
        assert_eq!(client.fetch_tags(&repo).unwrap().len(), expected);
    };

    // One warm-up of each (page cache, the registry's own caches).
    ours();
    theirs();
    library();
    let (mut t_ours, mut t_theirs, mut t_library) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        for (f, times) in [
            (&ours as &dyn Fn(), &mut t_ours),
            (&theirs, &mut t_theirs),
            (&library, &mut t_library),
        ] {
            let start = Instant::now();
            f();
            times.push(start.elapsed());
        }
    }
    let startup: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            checked(
                "skopeo --version",
                Command::new("skopeo").arg("--version").output(),
            );
            start.elapsed()
        })
        .collect();
    let startup_ours: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            checked(
                "image-update --version",
                Command::new(BIN).arg("--version").output(),
            );
            start.elapsed()
        })
        .collect();

    let (ours_median, ours_text) = summary(&t_ours);
    let (theirs_median, theirs_text) = summary(&t_theirs);
    println!(
        "{expected} tags listed per run over HTTPS; {runs} runs each, alternating; median (min to max)"
    );
    println!("| what | median (min to max) of {runs} |");
    println!("|---|---|");
    println!("| `image-update policy IMAGE --semver '*' --output json` (process) | {ours_text} |");
    println!("| `skopeo list-tags --cert-dir DIR docker://IMAGE` (process) | {theirs_text} |");
    println!(
        "| `RegistryClient::fetch_tags` (in process, no start-up) | {} |",
        summary(&t_library).1
    );
    println!(
        "| `image-update --version` (process start only) | {} |",
        summary(&startup_ours).1
    );
    println!(
        "| `skopeo --version` (process start only) | {} |",
        summary(&startup).1
    );
    println!(
        "ratio of the medians, image-update / skopeo: {:.2}",
        ours_median / theirs_median
    );
}
