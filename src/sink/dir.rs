//! Atomic, all-or-nothing-until-rename file writes.
//!
//! Every new content is first written to a temporary file beside its target
//! (same directory, so the rename cannot cross filesystems) with the
//! original's permission bits. Then the filesystems holding them are flushed
//! (`syncfs`, one call per filesystem instead of one `fsync` per file: on a
//! 1,000-file update that is the difference between milliseconds and a
//! second), and only then is each temporary file renamed over its target. A
//! failure before the renames leaves every target untouched; a crash leaves
//! each file either old or new, never torn.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A file to write: its target, its bytes, and a file whose permissions it
/// takes (usually the target itself).
#[derive(Debug, Clone, Copy)]
pub struct FileWrite<'a> {
    pub target: &'a Path,
    pub bytes: &'a [u8],
    pub permissions_from: Option<&'a Path>,
}

fn context(target: &Path, what: &str, e: &std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {what}: {e}", target.display()))
}

/// Write all files: stage every one, flush once, then rename each into
/// place. Returns the number of files written.
///
/// # Errors
/// IO errors with the path; nothing is renamed into place if staging or
/// flushing fails.
pub fn write_all(writes: &[FileWrite<'_>]) -> Result<usize, std::io::Error> {
    let mut staged = Vec::with_capacity(writes.len());
    for w in writes {
        staged.push((stage(w)?, w.target));
    }
    // Flush each distinct directory's filesystem once; repeated directories
    // on one filesystem cost almost nothing after the first call.
    let mut flushed: Vec<PathBuf> = Vec::new();
    for (tmp, target) in &staged {
        let dir = tmp
            .path()
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        if !flushed.contains(&dir) {
            rustix::fs::syncfs(tmp.as_file())
                .map_err(|e| context(target, "cannot flush", &e.into()))?;
            flushed.push(dir);
        }
    }
    let count = staged.len();
    for (tmp, target) in staged {
        tmp.persist(target)
            .map_err(|e| context(target, "cannot replace", &e.error))?;
    }
    Ok(count)
}

/// Write one file atomically (see [`write_all`]).
///
/// # Errors
/// IO errors with the path.
pub fn write_atomic(
    target: &Path,
    bytes: &[u8],
    permissions_from: Option<&Path>,
) -> Result<(), std::io::Error> {
    write_all(&[FileWrite {
        target,
        bytes,
        permissions_from,
    }])
    .map(|_| ())
}

fn stage(w: &FileWrite<'_>) -> Result<tempfile::NamedTempFile, std::io::Error> {
    let dir = w
        .target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| context(w.target, "cannot create directory", &e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".image-update-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| context(w.target, "cannot create a temporary file", &e))?;
    tmp.write_all(w.bytes)
        .map_err(|e| context(w.target, "cannot write", &e))?;
    if let Some(permissions) = w
        .permissions_from
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| m.permissions())
    {
        std::fs::set_permissions(tmp.path(), permissions)
            .map_err(|e| context(w.target, "cannot set permissions", &e))?;
    }
    Ok(tmp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn keeps_permissions_and_leaves_no_temp_files() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.yaml");
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&file, b"new", Some(&file)).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o640
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failure_while_staging_renames_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.yaml");
        std::fs::write(&good, "old").unwrap();
        // A regular file where a directory is needed makes staging fail.
        let blocker = dir.path().join("blocker");
        std::fs::write(&blocker, "").unwrap();
        let bad = blocker.join("bad.yaml");
        let err = write_all(&[
            FileWrite {
                target: &good,
                bytes: b"new",
                permissions_from: None,
            },
            FileWrite {
                target: &bad,
                bytes: b"new",
                permissions_from: None,
            },
        ])
        .unwrap_err();
        assert!(err.to_string().contains("bad.yaml"), "{err}");
        assert_eq!(std::fs::read_to_string(&good).unwrap(), "old");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            2,
            "no temporary file is left behind"
        );
    }
}
