//! Every committed input of `corpus/<target>/` through its target, without
//! libFuzzer. Built two ways, from the same source: by `cargo test
//! --manifest-path fuzz/Cargo.toml` (this crate's own tests), and as the
//! main workspace's `fuzz_corpus` test target (the root Cargo.toml), which
//! reuses the main test build and is what `cargo test --workspace` and CI
//! run.

use std::path::PathBuf;

/// The committed corpus of `target`: `corpus/` beside this crate's
/// Cargo.toml, which is `fuzz/corpus/` when the main workspace builds it.
pub(crate) fn corpus(target: &str) -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let own = manifest.join("corpus");
    let base = if own.is_dir() {
        own
    } else {
        manifest.join("fuzz").join("corpus")
    };
    base.join(target)
}

fn replay(target: &str) {
    let run = crate::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, run)| *run)
        .unwrap_or_else(|| panic!("no target {target}"));
    let dir = corpus(target);
    let mut count = 0;
    for entry in fs_err::read_dir(&dir).unwrap_or_else(|e| panic!("{e}")) {
        let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
        let data = fs_err::read(&path).unwrap_or_else(|e| panic!("{e}"));
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

/// One test per target, named as the target.
macro_rules! replays {
    ($($target:ident),* $(,)?) => {
        $(
            #[test]
            fn $target() {
                replay(stringify!($target));
            }
        )*

        /// Every target has its replay test.
        #[test]
        fn every_target_is_replayed() {
            let replayed = [$(stringify!($target)),*];
            for (name, _) in crate::TARGETS {
                assert!(replayed.contains(&name), "no replay test for the target {name}");
            }
        }
    };
}

replays!(
    marker,
    plan,
    krm,
    policies,
    tags,
    semver,
    template,
    report,
    bundle,
    certificate,
    note,
    argocd,
);
