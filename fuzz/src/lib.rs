//! The bodies of image-update's fuzz targets, one module per target.
//!
//! Each `fuzz_targets/NAME.rs` is one line that hands libFuzzer's input to
//! `NAME::run`. Keeping the bodies in a library lets `replay` run the
//! committed seeds and every saved crash through the same checks with plain
//! `cargo test`, on the stable toolchain and without libFuzzer; the main
//! workspace builds this library as its `fuzz_corpus` test target too (the
//! root Cargo.toml), so that `cargo test --workspace` runs them with the
//! dependencies it has already built.
//!
//! A target reports a finding by panicking: an `assert!` that states the
//! invariant, with the input's relevant parts in the message. Everything
//! else (an input the library rejects with an error) is an ordinary run.

// The main workspace's lints deny `panic!`; here it is how a finding is
// reported (this crate's own Cargo.toml allows it too).
#![allow(clippy::panic)]

pub mod argocd;
pub mod bundle;
pub mod certificate;
pub mod krm;
pub mod marker;
pub mod note;
pub mod plan;
pub mod policies;
pub mod report;
pub mod semver;
pub mod tags;
pub mod template;
pub mod tree;

#[cfg(test)]
mod replay;

/// The body of a target: one input in, a panic for a finding.
pub type Run = fn(&[u8]);

/// The targets, by name, as `fuzz_targets/` and `corpus/` name them.
pub const TARGETS: [(&str, Run); 12] = [
    ("marker", marker::run),
    ("plan", plan::run),
    ("krm", krm::run),
    ("policies", policies::run),
    ("tags", tags::run),
    ("semver", semver::run),
    ("template", template::run),
    ("report", report::run),
    ("bundle", bundle::run),
    ("certificate", certificate::run),
    ("note", note::run),
    ("argocd", argocd::run),
];
