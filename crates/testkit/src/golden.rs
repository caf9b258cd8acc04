//! Golden expectations: files compared byte for byte, regenerated only on
//! purpose, the same way in every harness of the workspace.
//!
//! * One trigger: `UPDATE_EXPECT=1`. Unset (or empty) compares; any other
//!   value (`0`, `true`...) is an error, so that a typo cannot pass for a
//!   check or for a regeneration.
//! * Refused when `CI` is set: CI compares, it never rewrites.
//! * A harness that regenerates writes the expectations first and then runs
//!   every check it runs otherwise (exit codes, idempotence, files that must
//!   not change...), against what it has just written: a regeneration cannot
//!   record a run that the checks would refuse.
//!
//! Review regenerated expectations with `git diff` like code.

use std::collections::BTreeMap;
use std::path::Path;

/// The variable that asks for regeneration.
pub const VARIABLE: &str = "UPDATE_EXPECT";

/// Whether expectations are rewritten in this run.
///
/// # Errors
/// When `UPDATE_EXPECT` has another value than `1`, or is `1` while `CI` is
/// set.
pub fn updating() -> Result<bool, String> {
    match std::env::var_os(VARIABLE) {
        None => Ok(false),
        Some(value) if value.is_empty() => Ok(false),
        Some(value) if value == "1" => {
            if crate::under_ci() {
                Err(format!("{VARIABLE}=1 is refused when CI is set"))
            } else {
                Ok(true)
            }
        }
        Some(value) => Err(format!(
            "{VARIABLE}={}: set {VARIABLE}=1 to regenerate the expectations, or leave it unset",
            value.to_string_lossy()
        )),
    }
}

/// Write one expectation (creating its directory), and say so on stderr.
///
/// # Errors
/// When the file cannot be written.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    fs_err::write(path, bytes).map_err(|e| e.to_string())?;
    eprintln!("updated {}", path.display());
    Ok(())
}

/// Remove an expectation that no longer applies (an `exit-code` file when
/// the run now exits 0); nothing when it does not exist.
///
/// # Errors
/// When it exists and cannot be removed.
pub fn remove(path: &Path) -> Result<(), String> {
    match fs_err::remove_file(path) {
        Ok(()) => {
            eprintln!("removed {}", path.display());
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// Replace the directory `dir` by exactly `files` (relative `/` paths and
/// their bytes).
///
/// # Errors
/// When the directory cannot be removed or a file cannot be written.
pub fn write_tree(dir: &Path, files: &BTreeMap<String, Vec<u8>>) -> Result<(), String> {
    match fs_err::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e.to_string()),
    }
    fs_err::create_dir_all(dir).map_err(|e| e.to_string())?;
    for (rel, bytes) in files {
        let target = dir.join(rel);
        if let Some(parent) = target.parent() {
            fs_err::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        fs_err::write(&target, bytes).map_err(|e| e.to_string())?;
    }
    eprintln!("updated {}", dir.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_tree_replaces_the_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("out");
        fs_err::create_dir_all(dir.join("stale")).unwrap();
        fs_err::write(dir.join("stale/old.yaml"), "old").unwrap();
        let files = BTreeMap::from([("a/b.yaml".to_owned(), b"new".to_vec())]);
        write_tree(&dir, &files).unwrap();
        assert!(!dir.join("stale").exists());
        assert_eq!(fs_err::read(dir.join("a/b.yaml")).unwrap(), b"new");
    }

    #[test]
    fn remove_ignores_a_missing_file() {
        let tmp = tempfile::tempdir().unwrap();
        remove(&tmp.path().join("exit-code")).unwrap();
        let file = tmp.path().join("exit-code");
        fs_err::write(&file, "1\n").unwrap();
        remove(&file).unwrap();
        assert!(!file.exists());
    }
}
