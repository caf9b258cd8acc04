//! Directory-mode benchmark (run with `cargo bench --bench pipeline`).
//!
//! 1. Generates a deterministic synthetic GitOps repository of 10,000 files
//!    (Deployments, HelmReleases with values, Kustomizations, Helm values
//!    files, Services/ConfigMaps and large CRD bundles; about 15% of the files
//!    carry `$imagepolicy` markers) under `target/bench-data/repo`.
//! 2. Times, warm cache, median of several runs in the same session:
//!    `grep -rl '"$imagepolicy"' DIR`, `image-update update DIR --dry-run`,
//!    and an in-place `image-update update` on a fresh copy of the tree.
//! 3. Measures the peak RSS of the dry run (`/usr/bin/time -f %M`).
//! 4. Measures in-process parse-and-splice throughput (`update::plan`) over
//!    the marked files only.
//!
//! `BENCH_FILES=N` changes the file count; `BENCH_RUNS=N` the repetitions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // benchmark code

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use image_update::api::markers::Layout;
use image_update::api::plan::{ImageRef, PolicyKey, PolicyTable};

#[path = "common/generate.rs"]
mod generate;

use generate::{POLICIES, generate, walk};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time(runs: usize, mut f: impl FnMut()) -> Duration {
    f(); // warm-up (page cache)
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn ok(cmd: &mut Command) {
    let status = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(
        status.code().is_some_and(|c| c == 0 || c == 3),
        "{cmd:?}: {status}"
    );
}

fn copy_tree(from: &Path, to: &Path) {
    ok(Command::new("cp").arg("-a").arg(from).arg(to));
}

fn main() {
    let files: usize = std::env::var("BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    let repo = base.join("repo");
    let policies = generate(&repo, files);
    let bin = env!("CARGO_BIN_EXE_image-update");

    let mut bytes = 0u64;
    let mut marked_texts = Vec::new();
    for entry in walk(&repo) {
        let text = fs_err::read_to_string(&entry).unwrap();
        bytes += text.len() as u64;
        if text.contains("\"$imagepolicy\"") {
            marked_texts.push(text);
        }
    }
    let marked_bytes: usize = marked_texts.iter().map(String::len).sum();
    println!(
        "repository: {files} files, {:.1} MB; {} marked files ({:.1}%), {:.2} MB",
        bytes as f64 / 1e6,
        marked_texts.len(),
        100.0 * marked_texts.len() as f64 / files as f64,
        marked_bytes as f64 / 1e6
    );

    let grep = time(runs, || {
        let _ = Command::new("grep")
            .args(["-rl", "\"$imagepolicy\""])
            .arg(&repo)
            .stdout(Stdio::null())
            .status();
    });
    let dry = time(runs, || {
        ok(Command::new(bin)
            .arg("update")
            .arg(&repo)
            .arg("--policies")
            .arg(&policies)
            .arg("--dry-run")
            .arg("-q"));
    });
    let scratch = base.join("scratch");
    let in_place_run = |extra: &[&str]| {
        let mut times = Vec::new();
        for _ in 0..runs.min(5) {
            if scratch.exists() {
                fs_err::remove_dir_all(&scratch).unwrap();
            }
            copy_tree(&repo, &scratch);
            // Write the copy back first, so its dirty pages are not counted.
            ok(&mut Command::new("sync"));
            let t = Instant::now();
            ok(Command::new(bin)
                .arg("update")
                .arg(&scratch)
                .arg("--policies")
                .arg(&policies)
                .arg("-q")
                .args(extra));
            times.push(t.elapsed());
        }
        median(times)
    };
    let in_place = in_place_run(&[]);

    let rss_kb = Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(bin)
        .arg("update")
        .arg(&repo)
        .arg("--policies")
        .arg(&policies)
        .args(["--dry-run", "-q"])
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stderr)
                .trim()
                .lines()
                .last()
                .and_then(|l| l.trim().parse::<u64>().ok())
        });

    // In-process parse-and-splice throughput on the marked files.
    let mut table = PolicyTable::new();
    for p in 0..POLICIES {
        table
            .insert(
                PolicyKey::parse(&format!("flux-system:app{p}")).unwrap(),
                Some(ImageRef::parse(&format!("ghcr.io/acme/app{p}:2.{p}.0")).unwrap()),
                "bench",
            )
            .unwrap();
    }
    let splice = time(runs, || {
        for text in &marked_texts {
            let plan =
                image_update::api::plan::plan(text, Layout::Documents, &table, Default::default())
                    .unwrap();
            std::hint::black_box(plan);
        }
    });

    println!("| measurement | median of {runs} | ratio |");
    println!("|---|---|---|");
    println!(
        "| `grep -rl '\"$imagepolicy\"' DIR` | {:.1} ms | 1.00x |",
        ms(grep)
    );
    println!(
        "| `image-update update DIR --dry-run` | {:.1} ms | {:.2}x grep |",
        ms(dry),
        ms(dry) / ms(grep)
    );
    println!(
        "| `image-update update DIR` (in place, fresh copy) | {:.1} ms | {:.2}x grep |",
        ms(in_place),
        ms(in_place) / ms(grep)
    );
    match rss_kb {
        Some(kb) => println!(
            "| peak RSS of the dry run | {:.1} MB | |",
            kb as f64 / 1024.0
        ),
        None => println!("| peak RSS of the dry run | (/usr/bin/time not installed) | |"),
    }
    println!(
        "| parse + splice, marked files only (1 thread, in process) | {:.1} ms for {:.2} MB = {:.1} MB/s | |",
        ms(splice),
        marked_bytes as f64 / 1e6,
        marked_bytes as f64 / 1e6 / splice.as_secs_f64()
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
