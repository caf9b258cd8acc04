//! The advisory lock on a tree: runs that write a tree in place take it
//! exclusively, runs that only read it take it shared, from before the
//! first file is read until the last one is renamed. Two runs on one tree
//! therefore run one after the other, and the second plans from the
//! first's result: the tree holds one run's result, never a mix.
//!
//! The lock is `flock(2)` on the directory itself (std's `File::lock`, no
//! lock file to leave behind); the kernel drops it when the process ends,
//! however it ends. It binds only runs of image-update on the same
//! directory: other programs, and runs given an overlapping but different
//! PATH (`repo` and `repo/apps`), are not held back.

use std::fs::TryLockError;
use std::path::{Path, PathBuf};

/// A held lock; dropping it releases the lock.
#[derive(Debug)]
pub(crate) struct TreeLock {
    _file: Option<fs_err::File>,
}

/// The lock could not be taken.
#[derive(Debug, thiserror::Error)]
#[error("{}: cannot lock the directory", path.display())]
pub(crate) struct LockError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl From<LockError> for crate::error::Error {
    fn from(error: LockError) -> Self {
        crate::error::Error::Other(Box::new(error))
    }
}

/// Lock the directory `dir`, exclusively or shared, waiting for another
/// run that holds it (with a message on stderr). A filesystem that does not
/// support locks is used unlocked, with a warning.
///
/// # Errors
/// When the directory cannot be opened or the lock fails.
pub(crate) fn lock(dir: &Path, exclusive: bool) -> Result<TreeLock, LockError> {
    let fail = |source| LockError {
        path: dir.to_path_buf(),
        source,
    };
    let file = fs_err::File::open(dir).map_err(fail)?;
    let attempt = if exclusive {
        file.file().try_lock()
    } else {
        file.file().try_lock_shared()
    };
    match attempt {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            tracing::warn!(
                "{}: another image-update run holds this tree; waiting for it to finish",
                dir.display()
            );
            let waited = if exclusive {
                file.file().lock()
            } else {
                file.file().lock_shared()
            };
            waited.map_err(fail)?;
        }
        Err(TryLockError::Error(e)) if unsupported(&e) => {
            tracing::warn!(
                "{}: the filesystem does not support locks, so concurrent runs are not serialised: {e}",
                dir.display()
            );
            return Ok(TreeLock { _file: None });
        }
        Err(TryLockError::Error(e)) => return Err(fail(e)),
    }
    Ok(TreeLock { _file: Some(file) })
}

fn unsupported(e: &std::io::Error) -> bool {
    // ENOLCK (37) and EOPNOTSUPP (95) on Linux: NFS without lockd, some FUSE.
    e.kind() == std::io::ErrorKind::Unsupported || matches!(e.raw_os_error(), Some(37 | 95))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusive_locks_exclude_and_shared_ones_share() {
        let dir = tempfile::tempdir().unwrap();
        let first = lock(dir.path(), false).unwrap();
        let second = lock(dir.path(), false).unwrap();
        let probe = fs_err::File::open(dir.path()).unwrap();
        assert!(matches!(
            probe.file().try_lock(),
            Err(TryLockError::WouldBlock)
        ));
        drop((first, second));
        let held = lock(dir.path(), true).unwrap();
        assert!(matches!(
            probe.file().try_lock_shared(),
            Err(TryLockError::WouldBlock)
        ));
        drop(held);
        probe.file().try_lock().unwrap();
    }
}
