//! Fuzz target `argocd`: see `image_update_fuzz::argocd` for what it checks.
#![no_main]
#![allow(
    clippy::disallowed_methods,
    reason = "libfuzzer-sys's macro opens its debug output file with std::fs"
)]

libfuzzer_sys::fuzz_target!(|data: &[u8]| image_update_fuzz::argocd::run(data));
