//! `policy --newest-build --platform` against Debian's `docker-registry` on
//! 127.0.0.1: a tag whose image has none of the platforms is counted as
//! such (`without an image for PLATFORM`, `dropped.no_platform`), apart from
//! a tag whose image has no creation time. Ignored with the reason when
//! `docker-registry` is missing, failed when `CI` is set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

use image_update_testkit::registry::{Auth, ImageSpec, Registry};
use image_update_testkit::{self as testkit, trial};

const BIN: &str = env!("CARGO_BIN_EXE_image-update");

/// The binary, isolated from the user's registry credentials.
fn run(home: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("HOME", home)
        .env_remove("DOCKER_CONFIG")
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `rel-a` amd64 only; `rel-b` an index with amd64 and arm64/v8 (plus an
/// attestation); `rel-c` arm64 without a creation time; `rel-d` amd64 only
/// and the newest of all. The index's children are tagged `child-*`, which
/// `--allow-tags` leaves out.
fn push(reg: &Registry) {
    let amd64 = |created: &str| ImageSpec::new("linux", "amd64", None, created);
    reg.push_image("team/nb", "rel-a", &amd64("2024-01-01T00:00:00Z"));
    reg.push_index(
        "team/nb",
        "rel-b",
        &[
            amd64("2024-02-01T00:00:00Z"),
            ImageSpec::new("linux", "arm64", Some("v8"), "2024-02-02T00:00:00Z"),
        ],
        true,
    );
    reg.push_image(
        "team/nb",
        "rel-c",
        &ImageSpec::new("linux", "arm64", None, "2024-03-01T00:00:00Z").without_created(),
    );
    reg.push_image("team/nb", "rel-d", &amd64("2025-01-01T00:00:00Z"));
}

fn platform_drops_are_named() {
    let reg = Registry::start(Auth::Anonymous);
    push(&reg);
    let image = format!("{}/team/nb", reg.authority());
    let home = tempfile::tempdir().unwrap();
    let base = [
        "policy",
        image.as_str(),
        "--newest-build",
        "--allow-tags",
        "regexp:^rel-",
    ];

    let out = run(
        home.path(),
        &[&base[..], &["--platform", "linux/arm64"]].concat(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("\ntag:    rel-b\n"), "{stdout}");
    assert!(
        stdout.ends_with(
            "dropped:\n  3 not allowed by allow-tags regexp:^rel-\n  1 without a creation time\n  \
             2 without an image for linux/arm64\n"
        ),
        "{stdout}"
    );

    let out = run(
        home.path(),
        &[
            &base[..],
            &["--platform", "linux/arm64", "--output", "json"],
        ]
        .concat(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["tag"], "rel-b");
    assert_eq!(json["eligible"], 1);
    assert_eq!(json["dropped"]["no_platform"], 2, "{json}");
    assert_eq!(json["dropped"]["no_created_time"], 1, "{json}");

    // No tag has the platform: the explanation says so for every tag.
    let out = run(
        home.path(),
        &[&base[..], &["--platform", "linux/s390x"]].concat(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "no tag qualifies for the newest-build policy: 7 tags listed, 3 not allowed by \
             allow-tags regexp:^rel-, 4 without an image for linux/s390x"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("creation time"), "{stderr}");

    // Two platforms: a tag with either one qualifies.
    let out = run(
        home.path(),
        &[
            &base[..],
            &["--platform", "linux/s390x", "--platform", "linux/amd64"],
        ]
        .concat(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("\ntag:    rel-d\n"), "{stdout}");
    assert!(
        stdout.ends_with("  1 without an image for linux/s390x or linux/amd64\n"),
        "{stdout}"
    );
}

fn main() {
    testkit::run(vec![trial(
        "platform_drops_are_named",
        &["docker-registry"],
        platform_drops_are_named,
    )]);
}
