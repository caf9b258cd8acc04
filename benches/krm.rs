//! Benchmark of the KRM function on a large package (not a timed test).
//!
//! Generates, deterministically, a kpt package of 40,000 Deployments in
//! 400 files (15% of them carry an `$imagepolicy` marker) plus 50 Flux
//! ImagePolicies with status, then in the same run:
//!
//! 1. `kpt fn source PKG > list.yaml` (what kpt does before every function);
//! 2. `image-update fn < list.yaml > out.yaml` (the release binary).
//!
//! Each is timed, and its peak RSS read with `/usr/bin/time -v` (Debian
//! package `time`): kpt once (it only prepares the input), the function
//! `BENCH_RUNS` (5) times, reported as the median, minimum and maximum of
//! its time and peak RSS. Targets: the function in at most 5 s with a peak
//! RSS of at most 3x the list's size. Run with `cargo bench --bench krm`;
//! the figures go to `BENCHMARKS.md` by hand. A failed run stops it.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_image-update");
const ITEMS: usize = 40_000;
const FILES: usize = 400;
const POLICIES: usize = 50;

fn main() -> Result<(), String> {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let pkg = tmp.path().join("pkg");
    let marked = generate(&pkg)?;
    println!(
        "package: {ITEMS} Deployments in {FILES} files, {marked} marked, {POLICIES} ImagePolicies"
    );

    let list = tmp.path().join("list.yaml");
    let source = measure(
        Command::new("kpt").args(["fn", "source"]).arg(&pkg),
        None,
        &list,
    )?;
    let size = fs_err::metadata(&list).map_err(|e| e.to_string())?.len();
    println!(
        "kpt fn source:    {:>6.2} s, peak RSS {:>7.1} MB   (list: {:.1} MB)",
        source.seconds,
        mb(source.max_rss_kb * 1024),
        mb(size)
    );

    let runs: usize = match std::env::var("BENCH_RUNS") {
        Ok(v) => v
            .parse()
            .map_err(|_| format!("BENCH_RUNS={v} is not a number"))?,
        Err(_) => 5,
    };
    let out = tmp.path().join("out.yaml");
    let mut seconds = Vec::new();
    let mut rss = Vec::new();
    let mut summary = String::new();
    for _ in 0..runs.max(1) {
        let run = measure(Command::new(BIN).arg("fn"), Some(&list), &out)?;
        if run.code != 0 {
            return Err(format!("image-update fn exited {}", run.code));
        }
        let results = fs_err::read_to_string(&out).map_err(|e| e.to_string())?;
        summary = results
            .lines()
            .find(|l| l.starts_with("- message: updated"))
            .ok_or("image-update fn reported no summary")?
            .trim_start_matches("- message: ")
            .to_owned();
        seconds.push(run.seconds);
        rss.push(run.max_rss_kb * 1024);
    }
    seconds.sort_by(f64::total_cmp);
    rss.sort_unstable();
    let n = seconds.len();
    let ratio = rss[n / 2] as f64 / size as f64;
    println!(
        "image-update fn:  median of {n}: {:.2} s ({:.2} to {:.2} s), peak RSS {:.1} MB ({:.1} to {:.1} MB; {ratio:.2}x the list)",
        seconds[n / 2],
        seconds[0],
        seconds[n - 1],
        mb(rss[n / 2]),
        mb(rss[0]),
        mb(rss[n - 1]),
    );
    println!("summary: {summary}");
    let verdict = |ok: bool| if ok { "ok" } else { "OVER TARGET" };
    println!(
        "targets: time <= 5 s: {}; peak RSS <= 3x input: {}",
        verdict(seconds[n / 2] <= 5.0),
        verdict(ratio <= 3.0)
    );
    Ok(())
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1_000_000.0
}

struct Measured {
    seconds: f64,
    max_rss_kb: u64,
    code: i32,
}

/// Run `cmd` under `/usr/bin/time -v`, stdin from `input`, stdout to `output`.
fn measure(cmd: &mut Command, input: Option<&Path>, output: &Path) -> Result<Measured, String> {
    let time = Path::new("/usr/bin/time");
    if !time.exists() {
        return Err("/usr/bin/time is missing: apt-get install time".into());
    }
    let report = output.with_extension("time");
    let mut wrapped = Command::new(time);
    wrapped
        .arg("-v")
        .arg("-o")
        .arg(&report)
        .arg(cmd.get_program())
        .args(cmd.get_args());
    let stdin = match input {
        Some(path) => Stdio::from(
            fs_err::File::open(path)
                .map_err(|e| e.to_string())?
                .into_parts()
                .0,
        ),
        None => Stdio::null(),
    };
    let stdout = fs_err::File::create(output)
        .map_err(|e| e.to_string())?
        .into_parts()
        .0;
    let start = Instant::now();
    let status = wrapped
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    let seconds = start.elapsed().as_secs_f64();
    let text = fs_err::read_to_string(&report).map_err(|e| e.to_string())?;
    let max_rss_kb = text
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("Maximum resident set size (kbytes): ")
        })
        .and_then(|v| v.trim().parse().ok())
        .ok_or("no maximum RSS in the time report")?;
    Ok(Measured {
        seconds,
        max_rss_kb,
        code: status.code().unwrap_or(-1),
    })
}

/// Write the package; returns the number of marked Deployments.
fn generate(pkg: &Path) -> Result<usize, String> {
    let write = |rel: &str, text: &str| -> Result<(), String> {
        let path = pkg.join(rel);
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        fs_err::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
    };
    write(
        "Kptfile",
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: bench\n",
    )?;
    let mut policies = String::new();
    for p in 0..POLICIES {
        let _ = write!(
            policies,
            "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: app-{p}\n  namespace: flux-system\nspec:\n  imageRepositoryRef:\n    name: app-{p}\n  policy:\n    semver:\n      range: 1.x\nstatus:\n  latestRef:\n    name: registry.example.com/team/app-{p}\n    tag: 1.{p}.1\n"
        );
    }
    write("flux/policies.yaml", &policies)?;
    let per_file = ITEMS / FILES;
    let mut marked = 0;
    for f in 0..FILES {
        let mut text = String::new();
        for d in 0..per_file {
            let i = f * per_file + d;
            let p = i % POLICIES;
            let marker = if i % 20 < 3 {
                marked += 1;
                format!(" # {{\"$imagepolicy\": \"flux-system:app-{p}\"}}")
            } else {
                String::new()
            };
            let _ = write!(
                text,
                "---\n# service {i}\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{i}\n  namespace: team-{ns}\n  labels:\n    app.kubernetes.io/name: app-{i}\n    app.kubernetes.io/part-of: bench\nspec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: app-{i}\n  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: app-{i}\n    spec:\n      containers:\n        - name: app\n          image: registry.example.com/team/app-{p}:1.0.0{marker}\n          args:\n            - \"--port=8080\"\n            - \"--log-level=info\"\n          env:\n            - name: APP_ID\n              value: \"app-{i}\"\n          ports:\n            - containerPort: 8080\n              name: http\n          resources:\n            requests:\n              cpu: 100m\n              memory: 128Mi\n          readinessProbe:\n            httpGet:\n              path: /readyz\n              port: http\n",
                ns = i % 17
            );
        }
        write(
            &format!("apps/group-{:02}/deployments-{f:03}.yaml", f / 40),
            &text,
        )?;
    }
    Ok(marked)
}
