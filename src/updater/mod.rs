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

pub(crate) mod plan;
pub(crate) mod scan;
pub(crate) mod source;
pub(crate) mod tree;
