//! Fetched policy results: image-update does the image-reflector's job.
//!
//! ```text
//! YAML documents ─> definitions (ImageRepository + ImagePolicy, ImageUpdater,
//!                   dockerconfigjson Secrets) ─> resolve (list tags per
//!                   repository concurrently, select, digests) ─> Resolved
//!               ─> PolicyTable entries (markers) and --emit-policies
//! ```
//!
//! `definitions` is pure; `resolve` is the only part that talks to
//! registries. Errors are collected for every policy and returned together:
//! one failing policy fails the whole run before any file is written
//! (docs/fetch.md).

pub mod definitions;
pub mod emit;
pub mod resolve;

pub use definitions::{CredentialSource, Definition, Document, collect, may_define};
pub use resolve::{Resolved, resolve};

use crate::resolve::{ConflictError, PolicyTable};

/// Insert fetched results into `table`, each under its definition's source.
///
/// # Errors
/// A conflict with a supplied result for the same policy, naming both.
pub fn insert_all(table: &mut PolicyTable, resolved: &[Resolved]) -> Result<(), ConflictError> {
    for r in resolved {
        table.insert(
            r.key.clone(),
            Some(r.latest.clone()),
            &format!("fetched for {}", r.source),
        )?;
    }
    Ok(())
}
