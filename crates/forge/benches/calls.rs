//! API calls per run, and the time of an update, against the loopback fakes of
//! `image_update_testkit::forge` (every request and answer validated against the provider's
//! API description, as in the tests).
//!
//! For each provider it counts the calls of: opening a request (with two labels, an assignee
//! and a reviewer); updating the open one whose title and body changed and which lacks a label
//! (the budget: at most three, look-up, update, labels); updating one whose title and body
//! changed; a run with nothing new; a run with nothing to do (leave, or close with a comment);
//! and, on GitHub, a GitHub App's token exchange. Any update over three calls fails the bench.
//!
//! Then it times the update (a fresh connection, a look-up and an edit: two calls) against its
//! floor, the same two requests (method, path, token, body) replayed byte for byte by a fresh
//! bare ureq agent to the same fake, alternating, `BENCH_RUNS` each (default 30), and prints
//! medians and spreads. The fake validates both alike, so the difference is the client's.
//!
//! Run: `scripts/api-descriptions.sh && cargo bench -p image-update-forge --bench calls`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/common/mod.rs"]
mod common;

use common::{HEAD, options, provider};
use std::time::{Duration, Instant};

use image_update_forge::{
    Credentials, Forge, HttpSettings, Proposal, Repository, Secret, WhenNothingToDo,
};
use image_update_testkit::forge::{App, FakeForge, Flavor, Pull};

fn connect(fake: &FakeForge, credentials: &Credentials) -> Forge {
    let repo = Repository::locate(
        &fake.remote_url(),
        Some(provider(fake.flavor)),
        Some(&fake.api_url()),
    )
    .unwrap();
    Forge::connect(repo, credentials, &HttpSettings::default()).unwrap()
}

fn token(flavor: Flavor) -> Credentials {
    Credentials::Token(Secret::new(format!("bench-{}", flavor.name())))
}

fn proposal(title: &str) -> Proposal {
    Proposal {
        head: HEAD.into(),
        base: "main".into(),
        title: title.into(),
        body: format!("body of {title}"),
    }
}

/// Calls of one run on a fresh fake prepared by `setup`.
fn calls(flavor: Flavor, setup: impl Fn(&FakeForge), run: impl Fn(&Forge)) -> u32 {
    let fake = FakeForge::start(flavor, &format!("bench-{}", flavor.name()), None).unwrap();
    setup(&fake);
    let forge = connect(&fake, &token(flavor));
    run(&forge);
    assert_eq!(fake.violations(), Vec::<String>::new());
    forge.api_calls()
}

fn existing(labels: &[&str]) -> impl Fn(&FakeForge) {
    let labels: Vec<String> = labels.iter().map(|l| (*l).to_owned()).collect();
    move |fake: &FakeForge| {
        let mut pull = Pull::new(HEAD, "main", "Old title");
        pull.labels.clone_from(&labels);
        pull.assignees = vec!["alice".into()];
        fake.add_pull(pull);
    }
}

fn median(mut v: Vec<Duration>) -> (Duration, Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() -> Result<(), String> {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    for flavor in Flavor::ALL {
        if let Err(e) = flavor.description() {
            return Err(format!("the API descriptions are not installed: {e}"));
        }
    }
    println!("API calls per run (besides the push):");
    println!(
        "| provider | create | update + missing label | update | unchanged | nothing to do | close | App token |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for flavor in Flavor::ALL {
        let create = calls(
            flavor,
            |_| {},
            |f| {
                f.open_or_update(&proposal("New"), &options()).unwrap();
            },
        );
        let update_labels = calls(flavor, existing(&["images"]), |f| {
            f.open_or_update(&proposal("New"), &options()).unwrap();
        });
        assert!(
            update_labels <= 3,
            "{flavor:?}: {update_labels} calls to update"
        );
        let update = calls(flavor, existing(&["dependencies", "images"]), |f| {
            f.open_or_update(&proposal("New"), &options()).unwrap();
        });
        let unchanged = calls(
            flavor,
            |fake| {
                let mut pull = Pull::new(HEAD, "main", "New");
                pull.body = "body of New".into();
                pull.labels = vec!["dependencies".into(), "images".into()];
                pull.assignees = vec!["alice".into()];
                fake.add_pull(pull);
            },
            |f| {
                f.open_or_update(&proposal("New"), &options()).unwrap();
            },
        );
        let leave = calls(flavor, existing(&[]), |f| {
            f.nothing_to_do(HEAD, "main", &WhenNothingToDo::Leave)
                .unwrap();
        });
        let close = calls(flavor, existing(&[]), |f| {
            let when = WhenNothingToDo::Close {
                comment: "Nothing to update.".into(),
            };
            f.nothing_to_do(HEAD, "main", &when).unwrap();
        });
        let app = if flavor == Flavor::GitHub {
            let key = fs_err::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/data/github-app.pem"
            ))
            .unwrap();
            let der = fs_err::read(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/data/github-app.pub.der"
            ))
            .unwrap();
            let fake = FakeForge::start(
                flavor,
                "",
                Some(App {
                    app_id: 1,
                    public_key_der: der,
                    installation_id: 2,
                    token: "ghs_bench".into(),
                }),
            )
            .unwrap();
            let forge = connect(
                &fake,
                &Credentials::GitHubApp {
                    app_id: "1".into(),
                    private_key: Secret::new(key),
                    installation_id: None,
                },
            );
            format!("+{}", forge.api_calls())
        } else {
            "-".to_owned()
        };
        println!(
            "| {} | {create} | {update_labels} | {update} | {unchanged} | {leave} | {close} | {app} |",
            flavor.name()
        );
    }

    println!();
    println!(
        "Updating an open request (connect, look up, edit) against the same two requests replayed by a bare ureq agent, {runs} runs each:"
    );
    println!("| provider | update, median (min-max) | floor, median (min-max) | ratio |");
    println!("|---|---|---|---|");
    for flavor in Flavor::ALL {
        let fake = FakeForge::start(flavor, &format!("bench-{}", flavor.name()), None).unwrap();
        existing(&["dependencies", "images"])(&fake);
        let forge = connect(&fake, &token(flavor));
        let before = fake.requests().len();
        forge
            .open_or_update(&proposal("warm-up"), &options())
            .unwrap();
        // The floor replays the two requests the update made, byte for byte.
        let made = fake.requests().split_off(before);
        assert_eq!(made.len(), 2);
        let authority = fake.api_url().split('/').nth(2).unwrap().to_owned();
        let (mut ours, mut floor) = (Vec::new(), Vec::new());
        for i in 0..runs {
            let started = Instant::now();
            let forge = connect(&fake, &token(flavor));
            forge
                .open_or_update(&proposal(&format!("Run {i}")), &options())
                .unwrap();
            ours.push(started.elapsed());
            assert_eq!(forge.api_calls(), 2);
            let started = Instant::now();
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into();
            for request in &made {
                let url = format!("http://{authority}{}", request.target);
                let auth = request.header("authorization").unwrap();
                let mut response = match request.method.as_str() {
                    "GET" => agent.get(&url).header("Authorization", auth).call(),
                    "PUT" => agent
                        .put(&url)
                        .header("Authorization", auth)
                        .header("Content-Type", "application/json")
                        .send(&request.body[..]),
                    _ => agent
                        .patch(&url)
                        .header("Authorization", auth)
                        .header("Content-Type", "application/json")
                        .send(&request.body[..]),
                }
                .unwrap();
                assert!(response.status().is_success(), "{}", response.status());
                response.body_mut().read_to_vec().unwrap();
            }
            floor.push(started.elapsed());
        }
        assert_eq!(fake.violations(), Vec::<String>::new());
        let (o, omin, omax) = median(ours);
        let (f, fmin, fmax) = median(floor);
        println!(
            "| {} | {} ({}-{}) | {} ({}-{}) | {:.2}x |",
            flavor.name(),
            ms(o),
            ms(omin),
            ms(omax),
            ms(f),
            ms(fmin),
            ms(fmax),
            o.as_secs_f64() / f.as_secs_f64()
        );
    }
    Ok(())
}
