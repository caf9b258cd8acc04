//! Atomic, durable, all-or-nothing-until-rename file writes.
//!
//! Every new content is first written to a temporary file beside its target
//! (same directory, so the rename cannot cross filesystems) with the
//! original's permission bits, and flushed to disk (`fdatasync`); only when
//! all are staged is each renamed over its target. A failure while staging
//! leaves every target untouched, no reader ever sees a half-written file,
//! and a power loss leaves each file either old or new.
//!
//! Flushing costs nothing extra here: ext4 writes a file's blocks out anyway
//! when it replaces another file by rename, and doing it up front on several
//! threads was faster than letting the renames do it (BENCHMARKS.md). Two
//! alternatives were measured and dropped: one `syncfs` for the whole
//! filesystem (it also flushes unrelated dirty data, such as a fresh clone)
//! and no flush at all (slower, and not crash-safe).

use std::io::Write;
use std::path::Path;

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

/// Write all files: stage and flush every one, then rename each into place.
/// Returns the number of files written.
///
/// # Errors
/// IO errors with the path; nothing is renamed into place if staging or
/// flushing fails.
pub fn write_all(writes: &[FileWrite<'_>]) -> Result<usize, std::io::Error> {
    let staged = in_parallel(writes, |w| {
        let tmp = stage(w)?;
        tmp.as_file()
            .sync_data()
            .map_err(|e| context(w.target, "cannot flush", &e))?;
        Ok((tmp, w.target))
    })?;
    let count = staged.len();
    in_parallel(staged, |(tmp, target)| {
        tmp.persist(target)
            .map_err(|e| context(target, "cannot replace", &e.error))
            .map(drop)
    })?;
    Ok(count)
}

#[cfg(unix)]
fn new_file_permissions(_: &std::fs::File) -> Result<std::fs::Permissions, std::io::Error> {
    use std::os::unix::fs::PermissionsExt;
    Ok(std::fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn new_file_permissions(file: &std::fs::File) -> Result<std::fs::Permissions, std::io::Error> {
    Ok(file.metadata()?.permissions())
}

/// Threads for staging and renaming. The work is I/O-bound (flushing a file
/// takes about 0.8 ms on these machines), so more threads than cores let the
/// flushes overlap.
const WRITERS: usize = 8;

/// Run `f` over `items` on up to [`WRITERS`] threads; results keep the
/// input order. The first error is returned after every item ran.
fn in_parallel<T, R, F>(items: impl IntoIterator<Item = T>, f: F) -> Result<Vec<R>, std::io::Error>
where
    T: Send,
    R: Send,
    F: Fn(T) -> Result<R, std::io::Error> + Sync,
{
    crate::pool::map(items, WRITERS, f).into_iter().collect()
}

fn stage(w: &FileWrite<'_>) -> Result<tempfile::NamedTempFile, std::io::Error> {
    let dir = w
        .target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs_err::create_dir_all(dir).map_err(|e| context(w.target, "cannot create directory", &e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".image-update-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| context(w.target, "cannot create a temporary file", &e))?;
    tmp.write_all(w.bytes)
        .map_err(|e| context(w.target, "cannot write", &e))?;
    // The permissions of the file this one replaces (or of `permissions_from`);
    // a new file gets 0644 instead of the temporary file's 0600.
    let permissions = w
        .permissions_from
        .into_iter()
        .chain([w.target])
        .find_map(|p| fs_err::metadata(p).ok())
        .map(|m| m.permissions());
    let permissions = match permissions {
        Some(p) => p,
        None => new_file_permissions(tmp.as_file())?,
    };
    fs_err::set_permissions(tmp.path(), permissions)
        .map_err(|e| context(w.target, "cannot set permissions", &e))?;
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
        fs_err::write(&file, "old").unwrap();
        fs_err::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_all(&[FileWrite {
            target: &file,
            bytes: b"new",
            permissions_from: None,
        }])
        .unwrap();
        assert_eq!(fs_err::read_to_string(&file).unwrap(), "new");
        assert_eq!(
            fs_err::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o640
        );
        assert_eq!(fs_err::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failure_while_staging_renames_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.yaml");
        fs_err::write(&good, "old").unwrap();
        // A regular file where a directory is needed makes staging fail.
        let blocker = dir.path().join("blocker");
        fs_err::write(&blocker, "").unwrap();
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
        assert_eq!(fs_err::read_to_string(&good).unwrap(), "old");
        assert_eq!(
            fs_err::read_dir(dir.path()).unwrap().count(),
            2,
            "no temporary file is left behind"
        );
    }
}
