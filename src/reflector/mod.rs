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
pub mod fetch;
pub mod selection;

pub use definitions::{CredentialSource, Definition, Document, collect, may_define};
pub use fetch::{Resolved, resolve};

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::policies::{ConflictError, PolicyTable};
use image_update_registry::{ClientSettings, CredentialStore, SettingsFile};

/// The registry client settings of a fetching run: defaults, overlaid with
/// the settings `file` when given, credentials from the environment, then
/// the cache overrides.
///
/// Each policy applies its own exclusion list (ImageRepository
/// `exclusionList`, `--exclude`; default `^.*\.sig$`), so the client drops
/// nothing unless the settings file has an `exclusionList` (which then
/// applies to every repository, in addition).
///
/// # Errors
/// An unreadable or invalid settings file.
#[allow(clippy::result_large_err)] // the registry crate's own error type
pub fn client_settings(
    file: Option<&Path>,
    cache_dir: Option<PathBuf>,
    cache_ttl: Option<Duration>,
) -> Result<ClientSettings, image_update_registry::Error> {
    let file = file.map(SettingsFile::load).transpose()?;
    let explicit_exclusion = file.as_ref().is_some_and(|f| f.exclusion_list.is_some());
    let mut settings = ClientSettings {
        credentials: CredentialStore::from_env(),
        ..ClientSettings::default()
    };
    if let Some(file) = file {
        settings.apply_file(file);
    }
    if !explicit_exclusion {
        settings.exclusion_list = Vec::new();
    }
    if let Some(dir) = cache_dir {
        settings.cache_dir = Some(dir);
    }
    if let Some(ttl) = cache_ttl {
        settings.cache_ttl = ttl;
    }
    Ok(settings)
}

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
