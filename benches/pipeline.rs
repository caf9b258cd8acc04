//! Directory-mode benchmark (run with `cargo bench --bench pipeline`).
//!
//! 1. Generates a deterministic synthetic GitOps repository of 10,000 files
//!    (Deployments, HelmReleases with values, Kustomizations, Helm values
//!    files, Services/ConfigMaps and large CRD bundles; about 15% of the files
//!    carry `$imagepolicy` markers) under `target/bench-data/repo`.
//! 2. Times, warm cache, after one warm-up, `BENCH_RUNS` (7) runs in the
//!    same session of `grep -rl '"$imagepolicy"' DIR` (which must find the
//!    marked files) and `image-update update DIR --dry-run`, and at most 5
//!    runs of an in-place `image-update update` on a fresh copy of the tree.
//!    The in-place runs' floor: the files they changed, written with the
//!    same new bytes on a fresh copy by the benchmark itself as durably as
//!    the tool writes them (a temporary file in the same directory, written,
//!    `fdatasync`, renamed over the original), the same number of runs.
//! 3. Measures the peak RSS of the dry run (`/usr/bin/time -f %M`).
//! 4. Measures in-process parse-and-splice throughput (`update::plan`) over
//!    the marked files only (`BENCH_RUNS` runs).
//!
//! Every row prints its run count and the median, minimum and maximum.
//! Any command that fails (grep finding nothing included) stops the
//! benchmark. `BENCH_FILES=N` changes the file count; `BENCH_RUNS=N` the
//! repetitions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // benchmark code

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use image_update::api::markers::Layout;
use image_update::api::plan::{ImageRef, PolicyKey, PolicyTable};

#[path = "common/generate.rs"]
mod generate;

use generate::{POLICIES, generate, walk};

/// The runs of one measurement.
struct Runs(Vec<Duration>);

impl Runs {
    fn sorted(&self) -> Vec<Duration> {
        let mut v = self.0.clone();
        v.sort();
        v
    }

    fn median(&self) -> Duration {
        let v = self.sorted();
        v[v.len() / 2]
    }

    /// `median of N (min to max)`, in ms.
    fn show(&self) -> String {
        let v = self.sorted();
        format!(
            "{:.1} ms, median of {} ({:.1} to {:.1} ms)",
            ms(self.median()),
            v.len(),
            ms(v[0]),
            ms(v[v.len() - 1])
        )
    }
}

fn time(runs: usize, mut f: impl FnMut()) -> Runs {
    f(); // warm-up (page cache)
    Runs(
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

    // `BENCH_ONLY=splice`: the in-process measurement alone (for callgrind:
    // the instructions of one pass are the difference between the totals
    // with `BENCH_RUNS=3` and `BENCH_RUNS=1`, halved).
    if std::env::var("BENCH_ONLY").is_ok_and(|v| v == "splice") {
        let splice = splice(runs, &marked_texts);
        println!(
            "parse + splice, marked files only (1 thread, in process): {} for {:.2} MB",
            splice.show(),
            marked_bytes as f64 / 1e6
        );
        return;
    }
    let grep = time(runs, || {
        // 0: found the marked files; 1 (none found) or 2 (an error) is a
        // broken benchmark.
        let status = Command::new("grep")
            .args(["-rl", "\"$imagepolicy\""])
            .arg(&repo)
            .stdout(Stdio::null())
            .status()
            .expect("cannot run grep");
        assert!(status.success(), "grep -rl found no marked file: {status}");
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
        Runs(times)
    };
    let in_place = in_place_run(&[]);
    // What the in-place run wrote (the last run's copy against the tree).
    let mut changed = Vec::new();
    for entry in walk(&scratch) {
        let rel = entry.strip_prefix(&scratch).unwrap().to_path_buf();
        let new = fs_err::read(&entry).unwrap();
        if fs_err::read(repo.join(&rel)).unwrap() != new {
            changed.push((rel, new));
        }
    }
    assert!(!changed.is_empty(), "the in-place run changed no file");
    let floor = durable_floor(runs.min(5), &repo, &scratch, &changed);

    let rss_kb = Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(bin)
        .arg("update")
        .arg(&repo)
        .arg("--policies")
        .arg(&policies)
        .args(["--dry-run", "-q"])
        .output()
        .expect("cannot run /usr/bin/time (apt-get install time)");
    assert!(
        rss_kb.status.success(),
        "the dry run under /usr/bin/time failed"
    );
    let rss_kb: u64 = String::from_utf8_lossy(&rss_kb.stderr)
        .trim()
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .expect("/usr/bin/time -f %M printed no number");

    let splice = splice(runs, &marked_texts);

    println!("| measurement | median of N runs (min to max) | ratio of medians |");
    println!("|---|---|---|");
    println!(
        "| `grep -rl '\"$imagepolicy\"' DIR` | {} | 1.00x |",
        grep.show()
    );
    println!(
        "| `image-update update DIR --dry-run` | {} | {:.2}x grep |",
        dry.show(),
        ms(dry.median()) / ms(grep.median())
    );
    println!(
        "| the same {} files written durably (temporary file, write, fdatasync, rename; in process, fresh copy) | {} | {:.2}x grep |",
        changed.len(),
        floor.show(),
        ms(floor.median()) / ms(grep.median())
    );
    println!(
        "| `image-update update DIR` (in place, fresh copy) | {} | {:.2}x grep, {:.2}x the durable writes |",
        in_place.show(),
        ms(in_place.median()) / ms(grep.median()),
        ms(in_place.median()) / ms(floor.median())
    );
    println!(
        "| peak RSS of the dry run | {:.1} MB (one run) | |",
        rss_kb as f64 / 1024.0
    );
    let splice_median = splice.median();
    println!(
        "| parse + splice, marked files only (1 thread, in process) | {} for {:.2} MB = {:.1} MB/s | |",
        splice.show(),
        marked_bytes as f64 / 1e6,
        marked_bytes as f64 / 1e6 / splice_median.as_secs_f64()
    );
}

/// The floor of an in-place run: `changed` (paths relative to the tree,
/// new bytes) written into a fresh copy of `repo` at `scratch`, each through
/// a temporary file in its directory that is written, flushed to disk with
/// `fdatasync` and renamed over the original; `runs` times.
fn durable_floor(
    runs: usize,
    repo: &Path,
    scratch: &Path,
    changed: &[(std::path::PathBuf, Vec<u8>)],
) -> Runs {
    use std::io::Write as _;
    let mut times = Vec::new();
    for _ in 0..runs {
        if scratch.exists() {
            fs_err::remove_dir_all(scratch).unwrap();
        }
        copy_tree(repo, scratch);
        ok(&mut Command::new("sync"));
        let t = Instant::now();
        for (rel, bytes) in changed {
            let target = scratch.join(rel);
            let mut name = target.file_name().unwrap().to_os_string();
            name.push(".floor-tmp");
            let temp = target.with_file_name(name);
            let mut file = fs_err::File::create(&temp).unwrap();
            file.write_all(bytes).unwrap();
            file.sync_data().unwrap();
            fs_err::rename(&temp, &target).unwrap();
        }
        times.push(t.elapsed());
    }
    Runs(times)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// In-process parse-and-splice of the marked files (`update::plan` against
/// the generated policies), on one thread.
fn splice(runs: usize, marked_texts: &[String]) -> Runs {
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
    time(runs, || {
        for text in marked_texts {
            let plan =
                image_update::api::plan::plan(text, Layout::Documents, &table, Default::default())
                    .unwrap();
            std::hint::black_box(plan);
        }
    })
}
