//! The updater: rewrite the fields marked with `$imagepolicy` comments, and
//! nothing else.
//!
//! ```text
//! source ──> scan ──> plan ──> rewrite ──> report ──> sink
//! (files,    (markers, (policy  (splice    (ResultV2)  (atomic
//!  a list)    spans)    table)   values)               writes)
//! ```

pub mod plan;
pub mod report;
pub mod rewrite;
pub mod scan;
pub mod sink;
pub mod source;
pub mod tree;
