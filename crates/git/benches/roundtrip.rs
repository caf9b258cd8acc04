//! The Job's git round trip on a large repository: shallow clone, change one marked line, commit,
//! push; the crate against the git CLI, in the same run, over the same lighttpd +
//! git-http-backend on 127.0.0.1.
//!
//! The repository holds 10,000 generated Deployment manifests (about 80 MB; fixed-seed
//! generator, so every run measures the same bytes). Each measured run starts from a fresh
//! directory and pushes a new tag to one marked image line, so every push carries one new
//! commit. Runs alternate between the crate and the CLI; the medians are printed.
//!
//! `cargo bench -p image-update-git --bench roundtrip` (needs lighttpd and git; `ROUNDTRIP_RUNS`
//! sets the runs per side, default 5). Wall-clock times suffer from other work on the machine;
//! the client CPU times (this process for the crate, the git processes for the CLI) less so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use image_update_testkit::git as support;

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine as _;
use fs_err as fs;
use image_update_git::{
    Auth, Author, Checkout, CheckoutRef, CloneOptions, CommitSettings, PushRequest, Remote,
    RemoteSettings, Secret,
};
use support::{Env, Fixture, HTTP_PASSWORD, HTTP_USER, Need, run};

const FILES: usize = 10_000;
/// The generator's seed: fixed, so the corpus never changes between runs.
const SEED: u64 = 0x1d3a_9e57_2026_1123;
const MARKED: &str = "apps/team-42/svc-04242/deployment.yaml";

fn main() -> std::process::ExitCode {
    match bench() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("roundtrip benchmark failed: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn bench() -> Result<(), String> {
    let (env, servers, temp) = Env::start_with(&[Need::Http])?;
    if let Some(reason) = env.missing(&[Need::Http]) {
        println!("roundtrip: skipped ({reason})");
        return Ok(());
    }
    let runs: usize = std::env::var("ROUNDTRIP_RUNS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(5);

    let started = Instant::now();
    let (fixture, bytes) = seed(&env)?;
    println!(
        "roundtrip: seeded {FILES} files, {:.1} MB, in {:.1} s",
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    let url = env.http_url(&fixture);

    let mut library = Vec::new();
    let mut library_phases = Vec::new();
    let mut cli = Vec::new();
    let mut cli_cpu = Vec::new();
    for run_index in 0..runs {
        let (total, phases) = with_crate(&env, &url, run_index)?;
        library.push(total);
        library_phases.push(phases);
        let (total, cpu) = with_cli(&env, &url, run_index)?;
        cli.push(total);
        cli_cpu.push(cpu);
    }

    let median = |values: &mut Vec<Duration>| {
        values.sort();
        values[values.len() / 2]
    };
    let mut clone = library_phases.iter().map(|p| p[0]).collect();
    let mut commit = library_phases.iter().map(|p| p[1]).collect();
    let mut push = library_phases.iter().map(|p| p[2]).collect();
    let mut library_cpu = library_phases.iter().map(|p| p[3]).collect();
    let (lib_median, cli_median) = (median(&mut library), median(&mut cli));
    let mut report = String::new();
    let _ = writeln!(
        report,
        "roundtrip (clone --depth 1 + edit one line + commit + push), median of {runs}:"
    );
    let _ = writeln!(
        report,
        "  image-update-git: {:>8.1} ms  (clone {:.1} ms, commit {:.1} ms, push {:.1} ms)",
        ms(lib_median),
        ms(median(&mut clone)),
        ms(median(&mut commit)),
        ms(median(&mut push))
    );
    let _ = writeln!(report, "  git CLI:          {:>8.1} ms", ms(cli_median));
    let _ = writeln!(
        report,
        "  client CPU (user+system, median): crate {:.0} ms, CLI {:.0} ms (server side excluded)",
        ms(median(&mut library_cpu)),
        ms(median(&mut cli_cpu))
    );
    let _ = writeln!(
        report,
        "  ratio crate/CLI:  {:>8.2} (target: at most 1.5)",
        lib_median.as_secs_f64() / cli_median.as_secs_f64()
    );
    let _ = writeln!(
        report,
        "  all runs (ms): crate {:?}, CLI {:?}",
        library.iter().map(|d| ms(*d).round()).collect::<Vec<_>>(),
        cli.iter().map(|d| ms(*d).round()).collect::<Vec<_>>()
    );
    print!("{report}");
    drop(servers);
    drop(env);
    drop(temp);
    Ok(())
}

/// CPU time used so far by this process (`self`) and by its waited-for children, from
/// `/proc/self/stat` (clock ticks of 10 ms, the Linux default `CLK_TCK` of 100).
fn cpu_times() -> (Duration, Duration) {
    let stat = fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<u64> = rest
        .split_whitespace()
        .map(|field| field.parse().unwrap_or(0))
        .collect();
    let ticks = |index: usize| fields.get(index).copied().unwrap_or(0);
    let tick = Duration::from_millis(10);
    (
        tick * u32::try_from(ticks(11) + ticks(12)).unwrap_or(0),
        tick * u32::try_from(ticks(13) + ticks(14)).unwrap_or(0),
    )
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// A fixed-seed generator (splitmix64), so the corpus is the same bytes in every run.
struct Generator(u64);

impl Generator {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn word(&mut self, len: usize) -> String {
        (0..len)
            .map(|_| {
                char::from(b"abcdefghijklmnopqrstuvwxyz0123456789"[(self.next() % 36) as usize])
            })
            .collect()
    }
}

/// One Deployment of about 8 KB: a marked image line, a sidecar, and environment variables.
fn manifest(generator: &mut Generator, team: usize, service: usize) -> String {
    let name = format!("svc-{service:05}");
    let mut text = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: team-{team:02}\n  labels:\n    app: {name}\n    team: team-{team:02}\nspec:\n  replicas: {}\n  selector:\n    matchLabels:\n      app: {name}\n  template:\n    metadata:\n      labels:\n        app: {name}\n    spec:\n      containers:\n        - name: app\n          image: ghcr.io/example/{name}:1.{}.{} # {{\"$imagepolicy\": \"flux-system:{name}\"}}\n          ports:\n            - containerPort: 8080\n          env:\n",
        1 + generator.next() % 5,
        generator.next() % 20,
        generator.next() % 10,
    );
    while text.len() < 7_600 {
        let _ = write!(
            text,
            "            - name: SETTING_{}\n              value: \"{}\"\n",
            generator.word(12).to_uppercase(),
            generator.word(40)
        );
    }
    let _ = write!(
        text,
        "        - name: proxy\n          image: docker.io/envoyproxy/envoy:v1.{}.0\n",
        generator.next() % 30
    );
    text
}

/// Writes the corpus and makes `repos/roundtrip.git` from it (one commit on
/// `main`, by the git CLI).
fn seed(env: &Env) -> Result<(Fixture, usize), String> {
    let seed = env.root.join("seed-tree/roundtrip");
    let mut generator = Generator(SEED);
    let mut bytes = 0;
    for index in 0..FILES {
        let team = index / 100;
        let dir = seed.join(format!("apps/team-{team:02}/svc-{index:05}"));
        fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let text = manifest(&mut generator, team, index);
        bytes += text.len();
        fs::write(dir.join("deployment.yaml"), text).map_err(|e| e.to_string())?;
    }
    let fixture = env
        .fixture_from_tree("roundtrip", &seed)
        .map_err(|e| format!("{e:?}"))?;
    fs::remove_dir_all(&seed).map_err(|e| e.to_string())?;
    Ok((fixture, bytes))
}

/// Sets the marked image's tag in the work tree.
fn edit(dir: &Path, tag: &str) -> Result<(), String> {
    let path = dir.join(MARKED);
    let text = fs::read_to_string(&path).map_err(|e| e.to_string())?;
    let prefix = "image: ghcr.io/example/svc-04242:";
    let start = text.find(prefix).ok_or("marked line not found")? + prefix.len();
    let end = start + text[start..].find(' ').ok_or("no marker comment")?;
    let edited = format!("{}{tag}{}", &text[..start], &text[end..]);
    fs::write(&path, edited).map_err(|e| e.to_string())
}

fn with_crate(env: &Env, url: &str, run_index: usize) -> Result<(Duration, [Duration; 4]), String> {
    let dir = env.work_dir(&format!("roundtrip-crate-{run_index}"));
    let settings = RemoteSettings {
        auth: Auth::Basic {
            username: HTTP_USER.to_owned(),
            password: Secret::new(HTTP_PASSWORD),
        },
        ..RemoteSettings::default()
    };
    let author = Author {
        name: "Image Update Bot".to_owned(),
        email: "bot@example.com".to_owned(),
    };
    let (cpu_before, _) = cpu_times();
    let started = Instant::now();
    let remote = Remote::new(url, settings).map_err(|e| e.to_string())?;
    let mut checkout = Checkout::clone(
        remote,
        &CheckoutRef::Branch("main".to_owned()),
        &dir,
        &CloneOptions::default(),
    )
    .map_err(|e| e.to_string())?;
    let cloned = started.elapsed();
    edit(&dir, &format!("2.{run_index}.0-crate"))?;
    let commit = CommitSettings {
        author: &author,
        signer: None,
        time: None,
    };
    checkout
        .commit(&commit, "Update svc-04242")
        .map_err(|e| e.to_string())?
        .ok_or("nothing committed")?;
    let committed = started.elapsed();
    checkout
        .push(&PushRequest::default())
        .map_err(|e| e.to_string())?;
    let total = started.elapsed();
    let cpu = cpu_times().0 - cpu_before;
    drop(checkout);
    fs::remove_dir_all(&dir).map_err(|e| e.to_string())?;
    Ok((total, [cloned, committed - cloned, total - committed, cpu]))
}

fn with_cli(env: &Env, url: &str, run_index: usize) -> Result<(Duration, Duration), String> {
    let dir = env.work_dir(&format!("roundtrip-cli-{run_index}"));
    let basic =
        base64::engine::general_purpose::STANDARD.encode(format!("{HTTP_USER}:{HTTP_PASSWORD}"));
    let header = format!("http.extraHeader=Authorization: Basic {basic}");
    let (_, cpu_before) = cpu_times();
    let started = Instant::now();
    run(env.git(&env.root).args([
        "-c",
        &header,
        "clone",
        "-q",
        "--depth",
        "1",
        "--branch",
        "main",
        url,
        &dir.to_string_lossy(),
    ]))?;
    edit(&dir, &format!("2.{run_index}.0-cli"))?;
    run(env
        .git(&dir)
        .args(["commit", "-q", "-a", "-m", "Update svc-04242"]))?;
    run(env
        .git(&dir)
        .args(["-c", &header, "push", "-q", "origin", "HEAD:main"]))?;
    let total = started.elapsed();
    let cpu = cpu_times().1 - cpu_before;
    fs::remove_dir_all(&dir).map_err(|e| e.to_string())?;
    Ok((total, cpu))
}
