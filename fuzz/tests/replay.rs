//! Every committed input of `corpus/<target>/` through its target, without
//! libFuzzer: `cargo test --manifest-path fuzz/Cargo.toml` on the stable
//! toolchain re-checks the seeds and every crash that became one.
#![allow(clippy::unwrap_used, reason = "test code: a failure is a panic")]

use std::path::Path;

fn replay(target: &str) {
    let run = image_update_fuzz::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, run)| *run)
        .unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    let mut count = 0;
    for entry in fs_err::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = fs_err::read(&path).unwrap();
        if let Err(cause) = std::panic::catch_unwind(|| run(&data)) {
            let message = cause
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| cause.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            panic!("{}: {message}", path.display());
        }
        count += 1;
    }
    assert!(count > 0, "no seeds in {}", dir.display());
}

#[test]
fn marker() {
    replay("marker");
}

#[test]
fn plan() {
    replay("plan");
}

#[test]
fn krm() {
    replay("krm");
}

#[test]
fn policies() {
    replay("policies");
}

#[test]
fn tags() {
    replay("tags");
}

#[test]
fn semver() {
    replay("semver");
}

#[test]
fn template() {
    replay("template");
}

#[test]
fn report() {
    replay("report");
}

#[test]
fn bundle() {
    replay("bundle");
}

#[test]
fn certificate() {
    replay("certificate");
}

#[test]
fn note() {
    replay("note");
}

#[test]
fn argocd() {
    replay("argocd");
}
