//! Pull-request benchmark (run with `cargo bench --bench pull_request`): the API calls and the
//! time of `image-update job --pull-request` through the binary, per provider.
//!
//! For each provider (the loopback fakes of `image_update_testkit::forge`, which validate every
//! call against the provider's API description and take their branches from the git bed's bare
//! repository), on a fresh repository of the git bed (lighttpd + `git-http-backend` on
//! 127.0.0.1), a run sequence, each run with a label, an assignee and a reviewer: **create** (a
//! new image: push, open), **unchanged** (the same image again: the branch already holds it,
//! nothing is pushed), **update** (another image: force-push, update in place), **update + new
//! label** (another image and a label the request lacks), **nothing to do** (the repository's
//! own image: the open request is left), **close** (the same with
//! `--pull-request-close-when-nothing-to-do`). Every run's
//! `pullRequest.apiCalls` must equal the calls the fake saw, and its action the expected one.
//! The floor is the same Job pushing the same change to the checkout branch (no request), timed
//! alternately with the create runs.
//!
//! Prints the calls of each step (the same in every round: asserted) and, per provider, the
//! median, best and worst of each timed step over `BENCH_RUNS` rounds (default 5), and
//! `/proc/loadavg` before and after. Needs `git`, `lighttpd`, `git-http-backend` and the API
//! descriptions (`scripts/api-descriptions.sh`); without them it says so and measures nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // benchmark code

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use image_update_testkit::forge::{FakeForge, Flavor};
use image_update_testkit::git::{Env, Fixture, HTTP_PASSWORD, HTTP_USER, Need};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_image-update");

/// The options of every run: a label, an assignee and a reviewer the fakes know.
const OPTIONS: [&str; 6] = [
    "--pull-request-label",
    "dependencies",
    "--pull-request-assignee",
    "alice",
    "--pull-request-reviewer",
    "bob",
];

/// The steps of a round: name, image tag, extra arguments, expected action.
const STEPS: [(&str, &str, &[&str], Option<&str>); 6] = [
    ("create", "2.0.0", &[], Some("created")),
    ("unchanged", "2.0.0", &[], Some("unchanged")),
    ("update", "3.0.0", &[], Some("updated")),
    (
        "update + new label",
        "4.0.0",
        &["--pull-request-label", "images"],
        Some("updated"),
    ),
    ("nothing to do", "1.0.0", &[], Some("unchanged")),
    (
        "close",
        "1.0.0",
        &["--pull-request-close-when-nothing-to-do"],
        Some("closed"),
    ),
];

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    let (env, _servers, _temp) = Env::start_with(&[Need::Http]).unwrap();
    if let Some(reason) = env.missing(&[Need::Http]) {
        println!("pull-request benchmark not run: {reason}");
        return;
    }
    for flavor in Flavor::ALL {
        if let Err(e) = flavor.description() {
            println!("pull-request benchmark not run: {e}");
            return;
        }
    }
    println!("load before: {}", loadavg());
    let mut calls_table = Vec::new();
    let mut times_table = Vec::new();
    for flavor in Flavor::ALL {
        let mut calls: Vec<u64> = Vec::new();
        let mut times: Vec<Vec<Duration>> = vec![Vec::new(); STEPS.len() + 1];
        for round in 0..runs {
            let name = format!("bench-pr-{}-{round}", flavor.name());
            let fixture = env.fixture(&name).unwrap();
            let token = format!("tok-{}", flavor.name());
            let fake = FakeForge::start_for(flavor, &format!("git/{name}"), &token, None).unwrap();
            fake.track_branches(&fixture.bare);
            // The floor: the same change pushed to the checkout branch of a twin repository.
            let twin = env.fixture(&format!("{name}-floor")).unwrap();
            let started = Instant::now();
            let status = job(&env, &twin, None, &token, "2.0.0", &[]);
            times[STEPS.len()].push(started.elapsed());
            assert_eq!(status["result"], "pushed", "{status:#}");
            let mut round_calls = Vec::new();
            for (i, (step, tag, extra, action)) in STEPS.iter().enumerate() {
                let before = fake.calls().len();
                let started = Instant::now();
                let status = job(&env, &fixture, Some(&fake), &token, tag, extra);
                times[i].push(started.elapsed());
                let request = &status["pullRequest"];
                assert_eq!(request["action"].as_str(), *action, "{step}: {status:#}");
                let counted = request["apiCalls"].as_u64().unwrap();
                assert_eq!(
                    counted as usize,
                    fake.calls().len() - before,
                    "{step}: {:#?}",
                    &fake.calls()[before..]
                );
                round_calls.push(counted);
            }
            assert!(fake.violations().is_empty(), "{:#?}", fake.violations());
            if calls.is_empty() {
                calls = round_calls;
            } else {
                assert_eq!(calls, round_calls, "the calls differ between rounds");
            }
        }
        assert!(
            calls[2] <= 3 && calls[3] <= 3,
            "an update took {} and {} calls",
            calls[2],
            calls[3]
        );
        calls_table.push(format!(
            "| {} | {} |",
            flavor.name(),
            calls
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(" | ")
        ));
        let cells: Vec<String> = times.into_iter().map(spread).collect();
        times_table.push(format!("| {} | {} |", flavor.name(), cells.join(" | ")));
    }
    println!("load after: {}", loadavg());
    println!("\nAPI calls per run of `job --pull-request` (besides the git push):\n");
    println!(
        "| provider | create | unchanged | update | update + new label | nothing to do | close |"
    );
    println!("|---|---|---|---|---|---|---|");
    for row in calls_table {
        println!("{row}");
    }
    println!("\nWall time per run, median (best-worst) of {runs}:\n");
    println!(
        "| provider | create | unchanged | update | update + new label | nothing to do | close | \
         floor: job pushing to main |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for row in times_table {
        println!("{row}");
    }
}

/// One `image-update job` over HTTP as alice, with `--pull-request` against `fake` when given;
/// its status.
fn job(
    env: &Env,
    fixture: &Fixture,
    fake: Option<&FakeForge>,
    token: &str,
    tag: &str,
    extra: &[&str],
) -> Value {
    let parent = env.root.join("bench-work");
    fs_err::create_dir_all(&parent).unwrap();
    let mut command = Command::new(BIN);
    command
        .env("HOME", env.root.join("home"))
        .env("IMAGE_UPDATE_GIT_USERNAME", HTTP_USER)
        .env("IMAGE_UPDATE_GIT_PASSWORD", HTTP_PASSWORD)
        .env("IMAGE_UPDATE_FORGE_TOKEN", token)
        .arg("job")
        .arg("--work-dir")
        .arg(&parent)
        .args(["--url", &env.http_url(fixture)])
        .args([
            "--author-name",
            "Bench",
            "--author-email",
            "bench@example.com",
        ])
        .args([
            "--policy",
            &format!("flux-system:app=ghcr.io/example/app:{tag}"),
        ])
        .args(extra);
    if let Some(fake) = fake {
        command
            .args(["--pull-request", "--forge", fake.flavor.name()])
            .args(["--forge-api-url", &fake.api_url()])
            .args(OPTIONS);
    }
    let out = command.stdin(Stdio::null()).output().unwrap();
    let status: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not a status ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        out.status.success(),
        "exit {:?}: {status:#}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    status
}

/// `median (best-worst)` in milliseconds.
fn spread(mut times: Vec<Duration>) -> String {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "{:.0} ms ({:.0}-{:.0})",
        ms(times[times.len() / 2]),
        ms(times[0]),
        ms(times[times.len() - 1])
    )
}

fn loadavg() -> String {
    fs_err::read_to_string("/proc/loadavg")
        .map(|l| l.trim().to_owned())
        .unwrap_or_default()
}
