//! The updater: rewrite the fields marked with `$imagepolicy` comments, and
//! nothing else.
//!
//! ```text
//! source ──> scan ──> plan ──> rewrite ──> crate::sink
//! (files,    (markers, (policy  (splice    (atomic
//!  a list)    spans)    table)   values)    writes)
//! ```
//!
//! What changed becomes the run's [`crate::outcome::Outcome`], which
//! [`crate::render`] turns into every output (the ResultV2 report among
//! them).

pub mod plan;
pub mod rewrite;
pub mod scan;
pub mod source;
pub mod tree;
