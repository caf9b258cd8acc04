//! Benchmark of the KRM function on large lists (not a timed test).
//!
//! Two cases, chosen with `BENCH_KRM` (`clean`, the default, `warnings`, or
//! `all`):
//!
//! * `clean`: a kpt package of 40,000 Deployments in 400 files (15% of them
//!   carry an `$imagepolicy` marker) plus 50 Flux ImagePolicies with status
//!   is turned into a ResourceList by `kpt fn source PKG` (timed too: what
//!   kpt does before every function), then `image-update fn` runs on it.
//!   Targets: at most 1.0 s, and a peak RSS of at most 1.5x the list's size.
//! * `warnings`: three lists of 71,000 Deployments written directly in the
//!   layout `kpt fn source` gives: one clean; one where 5,000 items repeat a
//!   key (5,000 warnings); one where 500 items are malformed in every way
//!   the scanner reports (duplicate keys, look-alike and misplaced markers,
//!   markers on block scalars and aliases, unknown policies: 12,000
//!   warnings). Target: each warning-heavy run within 1.5x of the clean
//!   one (the cost of a warning does not grow with the input).
//!
//! Each binary runs `BENCH_RUNS` times (default 5) on each list, under
//! `/usr/bin/time -v` (Debian package `time`) for its CPU time and peak
//! RSS; the median, minimum and maximum are printed. `BENCH_BASELINE=PATH`
//! adds another `image-update` binary (the "before" of a change), run
//! alternately with this one on the same lists, whose output must be the
//! same byte for byte. `BENCH_KRM_KEEP=PATH` keeps a copy of the clean
//! list there (to profile the function on it). Run with `cargo bench --bench
//! krm`; the figures go to `BENCHMARKS.md` by hand.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_image-update");
const ITEMS: usize = 40_000;
const FILES: usize = 400;
const POLICIES: usize = 50;
/// Items of the lists of the `warnings` case.
const WIDE: usize = 71_000;

fn main() -> Result<(), String> {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    let runs = match std::env::var("BENCH_RUNS") {
        Ok(v) => v
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or(format!("BENCH_RUNS={v}: expected a positive number"))?,
        Err(_) => 5,
    };
    let mut binaries = vec![("image-update fn", PathBuf::from(BIN))];
    if let Ok(path) = std::env::var("BENCH_BASELINE") {
        let path = PathBuf::from(path);
        if !path.is_file() {
            return Err(format!("BENCH_BASELINE={}: no such file", path.display()));
        }
        binaries.push(("baseline fn", path));
    }
    let case = std::env::var("BENCH_KRM").unwrap_or_else(|_| "clean".to_owned());
    if !matches!(case.as_str(), "clean" | "warnings" | "all") {
        return Err(format!("BENCH_KRM={case}: expected clean, warnings or all"));
    }
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut over = Vec::new();
    if case != "warnings" {
        over.extend(clean(tmp.path(), &binaries, runs)?);
    }
    if case != "clean" {
        over.extend(warnings(tmp.path(), &binaries, runs)?);
    }
    if over.is_empty() {
        println!("every target met");
        Ok(())
    } else {
        Err(format!("over target: {}", over.join("; ")))
    }
}

/// The `clean` case; returns the targets missed.
fn clean(tmp: &Path, binaries: &[(&str, PathBuf)], runs: usize) -> Result<Vec<String>, String> {
    let pkg = tmp.join("pkg");
    let marked = generate(&pkg)?;
    println!(
        "package: {ITEMS} Deployments in {FILES} files, {marked} marked, {POLICIES} ImagePolicies"
    );
    let list = tmp.join("list.yaml");
    let source = measure(
        Command::new("kpt").args(["fn", "source"]).arg(&pkg),
        None,
        &list,
    )?;
    let size = fs_err::metadata(&list).map_err(|e| e.to_string())?.len();
    if let Ok(keep) = std::env::var("BENCH_KRM_KEEP") {
        // For profiling the function on the same list outside the harness.
        fs_err::copy(&list, &keep).map_err(|e| e.to_string())?;
    }
    println!(
        "kpt fn source:    {:.2} s, peak RSS {:.1} MB   (list: {:.1} MB)",
        source.seconds,
        mb(source.max_rss_kb * 1024),
        mb(size)
    );
    let results = time_binaries(binaries, &list, runs)?;
    let ours = &results[0];
    let ratio = (ours.max_rss_kb() * 1024) as f64 / size as f64;
    let mut over = Vec::new();
    if ours.median() > 1.0 {
        over.push(format!("clean list: {:.2} s > 1.0 s", ours.median()));
    }
    if ratio > 1.5 {
        over.push(format!("clean list: peak RSS {ratio:.2}x > 1.5x the list"));
    }
    println!(
        "targets: time <= 1.0 s: {}; peak RSS <= 1.5x the list: {} ({ratio:.2}x)",
        verdict(ours.median() <= 1.0),
        verdict(ratio <= 1.5)
    );
    Ok(over)
}

/// The `warnings` case; returns the targets missed.
fn warnings(tmp: &Path, binaries: &[(&str, PathBuf)], runs: usize) -> Result<Vec<String>, String> {
    let lists = [
        ("clean", Flaw::None),
        ("5,000 duplicate keys", Flaw::DuplicateKey),
        ("500 malformed items", Flaw::Malformed),
    ];
    let mut medians = Vec::new();
    for (name, flaw) in lists {
        let path = tmp.join(format!("wide-{}.yaml", medians.len()));
        let text = wide_list(flaw);
        fs_err::write(&path, &text).map_err(|e| e.to_string())?;
        println!(
            "list of {WIDE} Deployments, {name}: {:.1} MB",
            mb(text.len() as u64)
        );
        let results = time_binaries(binaries, &path, runs)?;
        medians.push((name, results[0].median()));
    }
    let clean = medians[0].1;
    let mut over = Vec::new();
    for (name, median) in &medians[1..] {
        let factor = median / clean;
        println!(
            "target: {name} within 1.5x of clean: {} ({factor:.2}x)",
            verdict(factor <= 1.5)
        );
        if factor > 1.5 {
            over.push(format!("{name}: {factor:.2}x the clean list"));
        }
    }
    Ok(over)
}

/// What is wrong with the items of a generated list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flaw {
    None,
    /// 5,000 items repeat their `replicas` key.
    DuplicateKey,
    /// 500 items hold 24 problems each.
    Malformed,
}

/// A list of [`WIDE`] Deployments (15% marked) and the ImagePolicies
/// their markers name, laid out as `kpt fn source` lays out a package.
fn wide_list(flaw: Flaw) -> String {
    let mut text =
        String::from("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n");
    for p in 0..POLICIES {
        let _ = write!(
            text,
            "- apiVersion: image.toolkit.fluxcd.io/v1\n  kind: ImagePolicy\n  metadata:\n    name: app-{p}\n    namespace: flux-system\n    annotations:\n      config.kubernetes.io/index: '{p}'\n      config.kubernetes.io/path: 'flux/policies.yaml'\n      internal.config.kubernetes.io/index: '{p}'\n      internal.config.kubernetes.io/path: 'flux/policies.yaml'\n  spec:\n    imageRepositoryRef:\n      name: app-{p}\n    policy:\n      semver:\n        range: 1.x\n  status:\n    latestRef:\n      name: registry.example.com/team/app-{p}\n      tag: 1.{p}.1\n"
        );
    }
    for i in 0..WIDE {
        let p = i % POLICIES;
        let marker = if i % 20 < 3 {
            format!(" # {{\"$imagepolicy\": \"flux-system:app-{p}\"}}")
        } else {
            String::new()
        };
        let repeated = if flaw == Flaw::DuplicateKey && i % 14 == 0 && i / 14 < 5_000 {
            "    replicas: 3\n"
        } else {
            ""
        };
        let file = i / 100;
        let _ = write!(
            text,
            "- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: app-{i}\n    namespace: team-{ns}\n    annotations:\n      config.kubernetes.io/index: '{index}'\n      config.kubernetes.io/path: 'apps/deployments-{file:03}.yaml'\n      internal.config.kubernetes.io/index: '{index}'\n      internal.config.kubernetes.io/path: 'apps/deployments-{file:03}.yaml'\n  spec:\n    replicas: 2\n{repeated}    template:\n      spec:\n        containers:\n        - name: app\n          image: registry.example.com/team/app-{p}:1.0.0{marker}\n          ports:\n          - containerPort: 8080\n",
            ns = i % 17,
            index = i % 100,
        );
        if flaw == Flaw::Malformed && i % 142 == 0 && i / 142 < 500 {
            text.push_str(&malformed(i));
        }
    }
    text.push_str("functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: image-update\n");
    text
}

/// An item with 24 problems the scanner reports: 16 duplicate keys, four
/// look-alike markers, a marker above a key, one on a block scalar, one on
/// an alias, and one naming a policy nobody supplies.
fn malformed(i: usize) -> String {
    let mut text = format!(
        "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: broken-{i}\n  data:\n    base: &base app:1.0.0\n"
    );
    for k in 0..16 {
        let _ = write!(text, "    key-{k}: a\n    key-{k}: b\n");
    }
    for k in 0..4 {
        let _ = writeln!(
            text,
            "    near-{k}: app:1.0.0 # {{\"$imagepolicy\": \"no-colon-{k}\"}}"
        );
    }
    text.push_str("    # {\"$imagepolicy\": \"flux-system:app-1\"}\n    above: app:1.0.0\n");
    text.push_str(
        "    script: | # {\"$imagepolicy\": \"flux-system:app-1\"}\n      echo app:1.0.0\n",
    );
    text.push_str("    alias: *base # {\"$imagepolicy\": \"flux-system:app-1\"}\n");
    text.push_str("    unknown: app:1.0.0 # {\"$imagepolicy\": \"flux-system:missing\"}\n");
    text
}

fn verdict(ok: bool) -> &'static str {
    if ok { "ok" } else { "OVER TARGET" }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1_000_000.0
}

/// The runs of one binary on one list.
#[derive(Debug, Default)]
struct Runs {
    seconds: Vec<f64>,
    cpu: Vec<f64>,
    rss_kb: Vec<u64>,
}

impl Runs {
    fn median(&self) -> f64 {
        median(&self.seconds)
    }

    fn max_rss_kb(&self) -> u64 {
        self.rss_kb.iter().copied().max().unwrap_or(0)
    }
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

fn spread(values: &[f64]) -> (f64, f64) {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(0.0, f64::max);
    (min, max)
}

/// Run every binary `runs` times on `list`, alternately, and print each
/// one's figures; the outputs must match the first binary's.
fn time_binaries(
    binaries: &[(&str, PathBuf)],
    list: &Path,
    runs: usize,
) -> Result<Vec<Runs>, String> {
    let size = fs_err::metadata(list).map_err(|e| e.to_string())?.len();
    let mut all: Vec<Runs> = binaries.iter().map(|_| Runs::default()).collect();
    let mut outputs: Vec<PathBuf> = Vec::new();
    for _ in 0..runs {
        for (i, (_, binary)) in binaries.iter().enumerate() {
            let out = list.with_extension(format!("out{i}"));
            let run = measure(Command::new(binary).arg("fn"), Some(list), &out)?;
            if run.code != 0 {
                return Err(format!("{} fn exited {}", binary.display(), run.code));
            }
            all[i].seconds.push(run.seconds);
            all[i].cpu.push(run.cpu);
            all[i].rss_kb.push(run.max_rss_kb);
            if outputs.len() <= i {
                outputs.push(out);
            }
        }
    }
    let first = fs_err::read(&outputs[0]).map_err(|e| e.to_string())?;
    let summary = String::from_utf8_lossy(&first)
        .lines()
        .find(|l| l.starts_with("- message: "))
        .map(|l| l.trim_start_matches("- message: ").to_owned())
        .unwrap_or_else(|| "(no summary)".to_owned());
    for ((name, _), runs) in binaries.iter().zip(&all) {
        let (min, max) = spread(&runs.seconds);
        let (cpu_min, cpu_max) = spread(&runs.cpu);
        println!(
            "  {name:<16} {:.3} s median ({min:.3}-{max:.3}, {} runs); CPU {:.3} s ({cpu_min:.3}-{cpu_max:.3}); peak RSS {:.1} MB ({:.2}x the list)",
            runs.median(),
            runs.seconds.len(),
            median(&runs.cpu),
            mb(runs.max_rss_kb() * 1024),
            (runs.max_rss_kb() * 1024) as f64 / size as f64,
        );
    }
    println!("  summary: {summary}");
    for (i, out) in outputs.iter().enumerate().skip(1) {
        let other = fs_err::read(out).map_err(|e| e.to_string())?;
        if other != first {
            return Err(format!(
                "{} answers differently from {} on {}",
                binaries[i].0,
                binaries[0].0,
                list.display()
            ));
        }
    }
    Ok(all)
}

struct Measured {
    seconds: f64,
    /// User and system CPU time.
    cpu: f64,
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
    let field = |name: &str| -> Result<&str, String> {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .map(str::trim)
            .ok_or(format!("no {name:?} in the time report"))
    };
    let seconds_of = |name: &str| -> Result<f64, String> {
        field(name)?
            .parse::<f64>()
            .map_err(|e| format!("{name}: {e}"))
    };
    let max_rss_kb = field("Maximum resident set size (kbytes): ")?
        .parse()
        .map_err(|e| format!("maximum RSS: {e}"))?;
    let cpu = seconds_of("User time (seconds): ")? + seconds_of("System time (seconds): ")?;
    Ok(Measured {
        seconds,
        cpu,
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
