//! Job benchmark (run with `cargo bench --bench job`): the whole
//! `image-update job` against the git commands that do the same by hand.
//!
//! 1. Generates the directory benchmark's 10,000-file repository
//!    (`benches/common/generate.rs`) under `target/bench-data/job/repo`, and
//!    commits it to a bare repository served over HTTP with Basic auth by
//!    lighttpd + `git-http-backend` (`image_update_testkit::git`).
//! 2. Works out the change once, untimed: `image-update update` on a clone
//!    with the generated policies (every marked field moves to tag `2.N.0`),
//!    and keeps the changed files.
//! 3. Times, alternating, each on a bare repository reset to the seeded
//!    commit before the run (so that every run pushes a real change):
//!    * `image-update job --url URL --branch main --policies FILE` (shallow
//!      clone, update, commit, push), which must report `pushed`;
//!    * `git clone --depth 1 URL`, copying the changed files in,
//!      `git commit -a`, `git push`.
//!
//!    After every run the pushed commit's tree must be the expected one (the
//!    same tree from both sides).
//! 4. Prints the medians, their ratio (target: the job within 1.5x of the
//!    git commands) and `/proc/loadavg` before and after.
//!
//! `JOB_BENCH_BASELINE=PATH` also times another build of the binary, alternately with this one.
//! `BENCH_FILES=N` changes the file count; `BENCH_RUNS=N` the repetitions
//! (default 5). Needs `git`, `lighttpd` and `git-http-backend` (Debian:
//! `apt-get install git lighttpd`); without them it fails, naming them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // benchmark code

#[path = "common/generate.rs"]
mod generate;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use image_update_testkit::git::{self as bed, Env, HTTP_PASSWORD, HTTP_USER, Need};

const BIN: &str = env!("CARGO_BIN_EXE_image-update");
const REPO: &str = "fleet";

fn main() {
    let files: usize = env_number("BENCH_FILES").unwrap_or(10_000);
    let runs: usize = env_number("BENCH_RUNS").unwrap_or(5).max(1);
    // Another build of the binary, timed alternately with this one (a before/after comparison).
    let baseline: Option<PathBuf> = std::env::var_os("JOB_BENCH_BASELINE").map(PathBuf::from);
    let (env, _servers, _temp) = Env::start_with(&[Need::Http]).unwrap();
    if let Some(reason) = env.missing(&[Need::Http]) {
        panic!("the job benchmark cannot run: {reason}");
    }

    // The repository, committed and pushed to the served bare repository.
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/job");
    let tree = data.join("repo");
    let policies = generate::generate(&tree, files);
    let bytes: u64 = generate::walk(&tree)
        .iter()
        .map(|p| fs_err::metadata(p).unwrap().len())
        .sum();
    let fixture = env.fixture_from_tree(REPO, &tree).unwrap();
    let bare = fixture.bare.clone();
    let base = fixture.commits[0].clone();
    // Every measured run starts from a copy of this.
    let pristine = env.root.join("pristine.git");
    run_ok(Command::new("cp").arg("-a").arg(&bare).arg(&pristine));

    // The change, worked out once: the files `image-update update` changes.
    let edit = env.root.join("edit");
    git(&env, &env.root, &["clone", "-q", s(&pristine), s(&edit)]);
    let status = Command::new(BIN)
        .arg("update")
        .arg(&edit)
        .arg("--policies")
        .arg(&policies)
        .arg("-q")
        .status()
        .unwrap();
    assert!(status.success(), "image-update update: {status}");
    let changed: Vec<String> = git(&env, &edit, &["diff", "--name-only"])
        .lines()
        .map(str::to_owned)
        .collect();
    git(&env, &edit, &["commit", "-q", "-am", "expected"]);
    let expected_tree = git(&env, &edit, &["rev-parse", "HEAD^{tree}"]);
    println!(
        "repository: {files} files, {:.1} MB; the change: {} files",
        bytes as f64 / 1e6,
        changed.len()
    );

    let url = env.http_url(&fixture);
    let cred_url = format!(
        "http://{HTTP_USER}:{HTTP_PASSWORD}@127.0.0.1:{}/git/{REPO}.git",
        env.http_port()
    );
    let reset = || {
        if bare.exists() {
            fs_err::remove_dir_all(&bare).unwrap();
        }
        run_ok(Command::new("cp").arg("-a").arg(&pristine).arg(&bare));
    };
    let check_pushed = |what: &str| {
        let head = git(&env, &bare, &["rev-parse", "main"]);
        assert_ne!(head, base, "{what}: nothing was pushed");
        assert_eq!(
            git(&env, &bare, &["rev-parse", &format!("{head}^")]),
            base,
            "{what}"
        );
        let pushed_tree = git(&env, &bare, &["rev-parse", "main^{tree}"]);
        assert_eq!(
            pushed_tree, expected_tree,
            "{what}: another change was pushed"
        );
    };
    let work = env.root.join("work");
    let job_run = |bin: &Path| {
        reset();
        let tmp = work.join("job-tmp");
        fs_err::create_dir_all(&tmp).unwrap();
        let t = Instant::now();
        let out = Command::new(bin)
            .args(["job", "--url", &url, "--branch", "main", "--policies"])
            .arg(&policies)
            .args([
                "--author-name",
                "bench",
                "--author-email",
                "bench@example.com",
            ])
            .env("IMAGE_UPDATE_GIT_USERNAME", HTTP_USER)
            .env("IMAGE_UPDATE_GIT_PASSWORD", HTTP_PASSWORD)
            .env("TMPDIR", &tmp)
            .output()
            .unwrap();
        let elapsed = t.elapsed();
        assert!(
            out.status.success(),
            "image-update job: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let status: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("image-update job's status: {e}"));
        assert_eq!(status["result"], "pushed", "{status}");
        check_pushed("image-update job");
        fs_err::remove_dir_all(&tmp).unwrap();
        elapsed
    };
    let git_run = || {
        reset();
        let clone = work.join("git-clone");
        if clone.exists() {
            fs_err::remove_dir_all(&clone).unwrap();
        }
        let t = Instant::now();
        git(
            &env,
            &env.root,
            &["clone", "-q", "--depth", "1", &cred_url, s(&clone)],
        );
        for file in &changed {
            fs_err::copy(edit.join(file), clone.join(file)).unwrap();
        }
        git(
            &env,
            &clone,
            &["commit", "-q", "-am", "Update from image update automation"],
        );
        git(&env, &clone, &["push", "-q", "origin", "HEAD:main"]);
        let elapsed = t.elapsed();
        check_pushed("git");
        elapsed
    };

    let load_before = loadavg();
    let mut git_times = Vec::new();
    let mut job_times = Vec::new();
    let mut baseline_times = Vec::new();
    git_run(); // warm-up (page cache, lighttpd)
    job_run(Path::new(BIN));
    if let Some(other) = &baseline {
        job_run(other);
    }
    for _ in 0..runs {
        git_times.push(git_run());
        job_times.push(job_run(Path::new(BIN)));
        if let Some(other) = &baseline {
            baseline_times.push(job_run(other));
        }
    }
    let load_after = loadavg();

    let git_median = median(git_times.clone());
    println!("| measurement | median of {runs} | runs | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| `git clone --depth 1` + copy the changed files + `git commit -a` + `git push` | {:.0} ms | {} | 1.00x |",
        ms(git_median),
        list(&git_times)
    );
    let job_median = median(job_times.clone());
    let ratio = ms(job_median) / ms(git_median);
    println!(
        "| `image-update job` (shallow clone, update, commit, push) | {:.0} ms | {} | {ratio:.2}x git (target <= 1.5x: {}) |",
        ms(job_median),
        list(&job_times),
        if ratio <= 1.5 { "met" } else { "NOT met" }
    );
    if let Some(other) = &baseline {
        let median = median(baseline_times.clone());
        println!(
            "| `{}` job (JOB_BENCH_BASELINE) | {:.0} ms | {} | {:.2}x git |",
            other.display(),
            ms(median),
            list(&baseline_times),
            ms(median) / ms(git_median)
        );
    }
    println!("load average (1, 5, 15 min) before: {load_before}; after: {load_after}");
}

fn env_number(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `git ARGS` in `dir` with the bed's private configuration; trimmed stdout.
fn git(env: &Env, dir: &Path, args: &[&str]) -> String {
    bed::run(env.git(dir).args(args)).unwrap().trim().to_owned()
}

fn run_ok(command: &mut Command) {
    bed::run(command).unwrap();
}

fn loadavg() -> String {
    fs_err::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn list(times: &[Duration]) -> String {
    times
        .iter()
        .map(|t| format!("{:.0}", ms(*t)))
        .collect::<Vec<_>>()
        .join(", ")
}
