//! The commit of a run's files: all of them, or none.
//!
//! One commit writes a batch of files (the changed files and the report or
//! emitted policies) in five steps:
//!
//! 1. **journal**: `.image-update.<pid>-<token>.journal` is created in the
//!    commit's directory, locked, and names every target (see `journal`);
//! 2. **stage**: each new content goes to `.image-update.<id>.<n>.tmp`
//!    beside its target (same directory, so the rename cannot cross
//!    filesystems), with the original's owner, group and permission bits,
//!    and is flushed (`fdatasync`);
//! 3. **back up**: each original is hard-linked to `.image-update.<id>.<n>.orig`
//!    (copied where the filesystem has no hard links); the journal records
//!    the identities of the staged files and originals and is flushed;
//! 4. **rename** each staged file over its target;
//! 5. **finish**: the journal says `committed`, the backups and the journal
//!    are removed.
//!
//! A failure (or SIGTERM, SIGINT, SIGHUP) in steps 1 to 3 changes no target;
//! in step 4 every target already renamed gets its original back from the
//! backup. Either way the temporary files and backups are removed, and the
//! error says nothing was written. If the process is killed (SIGKILL, power
//! loss), the journal stays: the next run that writes the tree in place
//! takes it over ([`recover`]) before it reads the tree, puts back the
//! originals of a commit that had not finished, and removes its files.
//!
//! The flush costs nothing extra on ext4, which writes a file's blocks out
//! anyway when it replaces another file by rename (BENCHMARKS.md); the
//! backups cost one `link` and one `unlink` per file, and the journal one
//! more flush per commit.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use super::door::{Door, Refusal};
use super::interrupt;
use super::journal::{self, Journal, Slot, Unrestored, id_of, remove_if_present};

/// A file to write: its target, its bytes, a file whose permissions and
/// owner it takes (usually the target itself), and the door of the tree it
/// must stay in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FileWrite<'a> {
    pub target: &'a Path,
    pub bytes: &'a [u8],
    pub permissions_from: Option<&'a Path>,
    /// A tree's file (`target` below the door's root) is resolved by the
    /// door before it is staged: written only inside the tree, through
    /// symlinks that stay inside, a regular file or a new one. `None` for
    /// an output the user named (`--report FILE`), written where named.
    pub door: Option<&'a Door>,
}

/// Why a commit wrote nothing, or what it could not undo.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CommitError {
    /// A file could not be staged or backed up: no file was changed.
    #[error("nothing was written: {}: cannot {action}", target.display())]
    Staging {
        target: PathBuf,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// A file could not be renamed into place: every file already replaced
    /// was put back, so no file was changed.
    #[error("nothing was written: {}: cannot replace it, so the files already replaced were put back", target.display())]
    RolledBack {
        target: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file could not be renamed into place, and some replaced files could
    /// not be put back: their originals are kept beside them.
    #[error("{}: cannot replace it, and {} could not be put back: {}", target.display(), unrestored_count(.unrestored), describe(.unrestored))]
    RollbackFailed {
        target: PathBuf,
        #[source]
        source: std::io::Error,
        unrestored: Vec<Unrestored>,
    },
    /// A tree's file was refused by its door: no file was changed.
    #[error("nothing was written: {0}")]
    Refused(#[source] Refusal),
    /// A signal arrived during the commit: no file was changed.
    #[error("interrupted by {}; nothing was written", interrupt::name(*.signal))]
    Interrupted { signal: i32 },
    /// What had to happen between staging and renaming (the outputs the
    /// user asked for on stdout) failed: no file was changed.
    #[error("nothing was written")]
    Aborted {
        #[source]
        source: BoxError,
    },
}

/// An error of a [`BeforeRename`] step.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What runs after every file is staged and before the first rename (or,
/// when there is nothing to write, at once): its failure aborts the commit
/// with nothing written.
pub(crate) type BeforeRename<'a> = &'a mut dyn FnMut() -> Result<(), BoxError>;

fn unrestored_count(u: &[Unrestored]) -> String {
    match u.len() {
        1 => "1 replaced file".to_owned(),
        n => format!("{n} replaced files"),
    }
}

fn describe(u: &[Unrestored]) -> String {
    u.iter()
        .map(|x| {
            format!(
                "{} (its original is {}: {})",
                x.target.display(),
                x.backup.display(),
                x.reason
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl CommitError {
    /// The signal that interrupted the commit, if one did.
    #[must_use]
    pub(crate) fn signal(&self) -> Option<i32> {
        match self {
            CommitError::Interrupted { signal } => Some(*signal),
            _ => None,
        }
    }
}

impl From<CommitError> for crate::error::Error {
    fn from(error: CommitError) -> Self {
        crate::error::Error::Commit(crate::error::CommitFailure {
            signal: error.signal(),
            error: Box::new(error),
        })
    }
}

/// What [`recover`] did with the journals of runs that are gone.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Recovered {
    /// One sentence per journal dealt with.
    pub notes: Vec<String>,
    /// Originals that could not be put back (the backup is kept), one
    /// sentence each.
    pub problems: Vec<String>,
}

/// Take over the commits left in `dir` by runs that are gone (killed during
/// a commit): an unfinished commit is undone (its replaced files get their
/// originals back, files it created are removed), a finished one loses its
/// leftover backups; in both cases its temporary files and journal go.
/// Only files named by such a journal are touched.
#[must_use]
pub(crate) fn recover(dir: &Path) -> Recovered {
    let mut out = Recovered::default();
    for stale in journal::stale(dir) {
        let pid = stale.pid;
        if stale.committed {
            journal::finish(&stale.slots);
            out.notes.push(format!(
                "removed the leftover files of a finished run (process {pid}) that was killed"
            ));
        } else {
            let undone = journal::undo(&stale.slots);
            out.notes.push(format!(
                "a run (process {pid}) was killed while writing: put back {} of the files it had replaced and removed {} it had created, and its temporary files",
                undone.restored, undone.removed
            ));
            for u in &undone.unrestored {
                out.problems.push(format!(
                    "{} could not be put back ({}); its original is {}",
                    u.target.display(),
                    u.reason,
                    u.backup.display()
                ));
            }
            if !undone.unrestored.is_empty() {
                continue;
            }
        }
        let _ = fs_err::remove_file(&stale.path);
        drop(stale.file);
    }
    out
}

/// The processes whose killed commits left a journal in `dir` (looked at,
/// not touched).
#[must_use]
pub(crate) fn interrupted(dir: &Path) -> Vec<u32> {
    journal::stale(dir).into_iter().map(|s| s.pid).collect()
}

/// Threads for staging and renaming. The work is I/O-bound (flushing a file
/// takes about 0.8 ms on these machines), so more threads than cores let the
/// flushes overlap.
const WRITERS: usize = 8;

/// Write all files as one commit (see the module documentation), with the
/// journal in `journal_dir` (default: the first target's directory).
/// Returns the number of files written.
///
/// # Errors
/// [`CommitError`]: in every case but `RollbackFailed`, no file changed.
#[cfg(test)]
pub(crate) fn write_all(
    writes: &[FileWrite<'_>],
    journal_dir: Option<&Path>,
) -> Result<usize, CommitError> {
    commit(writes, journal_dir, &NoFaults, &mut || Ok(()))
}

/// Write all files as one commit (see the module documentation), with the
/// journal in `journal_dir` (default: the first target's directory),
/// running `before_rename` once every file is staged and
/// before the first rename: outputs that must arrive for the commit to be
/// worth making (a diff on stdout) are written there, so that their
/// failure changes nothing.
///
/// # Errors
/// [`CommitError`]: in every case but `RollbackFailed`, no file changed;
/// [`CommitError::Aborted`] when `before_rename` fails.
pub(crate) fn write_all_then(
    writes: &[FileWrite<'_>],
    journal_dir: Option<&Path>,
    before_rename: BeforeRename<'_>,
) -> Result<usize, CommitError> {
    commit(writes, journal_dir, &NoFaults, before_rename)
}

/// The steps at which a test can inject a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    Stage,
    Rename,
    /// Before the rename of file `n`: an error here simulates a process
    /// killed at that point (the files renamed so far stay, nothing is
    /// cleaned up, the journal's lock is released).
    Crash,
}

pub(crate) trait Faults: Sync {
    fn at(&self, step: Step, n: usize) -> std::io::Result<()>;
}

struct NoFaults;

impl Faults for NoFaults {
    fn at(&self, _: Step, _: usize) -> std::io::Result<()> {
        Ok(())
    }
}

pub(crate) fn commit(
    writes: &[FileWrite<'_>],
    journal_dir: Option<&Path>,
    faults: &dyn Faults,
    before_rename: BeforeRename<'_>,
) -> Result<usize, CommitError> {
    if writes.is_empty() {
        before_rename().map_err(|source| CommitError::Aborted { source })?;
        return Ok(0);
    }
    let _signals = interrupt::guard();
    let id = commit_id();
    // Every tree file through its door, before anything is staged.
    let resolved = writes
        .iter()
        .map(|w| through_door(w).map_err(CommitError::Refused))
        .collect::<Result<Vec<_>, _>>()?;
    let resolved: Vec<FileWrite<'_>> = writes
        .iter()
        .zip(&resolved)
        .map(|(w, target)| FileWrite {
            target: target.as_deref().unwrap_or(w.target),
            ..*w
        })
        .collect();
    let writes = resolved.as_slice();
    let mut slots: Vec<Slot> = Vec::with_capacity(writes.len());
    let mut unique: Vec<FileWrite<'_>> = Vec::with_capacity(writes.len());
    let mut seen = std::collections::HashMap::new();
    for w in writes {
        let target = std::path::absolute(w.target).map_err(|source| CommitError::Staging {
            target: w.target.to_path_buf(),
            action: "resolve the path",
            source,
        })?;
        // A file reached twice (itself and a symlink to it) is written once.
        if let Some(&first) = seen.get(&target) {
            if unique
                .get(first)
                .is_some_and(|u: &FileWrite<'_>| u.bytes != w.bytes)
            {
                return Err(CommitError::Staging {
                    target,
                    action: "write it: it would be written twice, with different contents",
                    source: std::io::Error::other("conflicting writes"),
                });
            }
            continue;
        }
        seen.insert(target.clone(), unique.len());
        let existed = fs_err::symlink_metadata(&target).is_ok();
        slots.push(Slot::new(&id, unique.len(), target, existed));
        unique.push(*w);
    }
    let writes = unique.as_slice();
    let dir = journal_dir
        .map(Path::to_path_buf)
        .or_else(|| slots[0].target.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    // A commit killed earlier in this directory is undone first.
    let recovered = recover(&dir);
    for note in recovered.notes.iter().chain(&recovered.problems) {
        tracing::warn!("{}: {note}", dir.display());
    }
    let staging = |target: &Path, action, source| CommitError::Staging {
        target: target.to_path_buf(),
        action,
        source,
    };
    // Directories a new file needs are created first, and removed again
    // when the commit writes nothing.
    let mut created = Vec::new();
    for w in writes {
        if let Some(parent) = w.target.parent().filter(|p| !p.as_os_str().is_empty())
            && let Err(e) = create_dirs(parent, &mut created)
        {
            remove_dirs(&created);
            return Err(staging(w.target, "create its directory", e));
        }
    }
    let result = commit_staged(writes, slots, &dir, &id, faults, before_rename);
    if result
        .as_ref()
        .is_err_and(|e| !matches!(e, CommitError::RollbackFailed { .. }))
    {
        remove_dirs(&created);
    }
    result
}

/// Where a tree's file is written: the path its door resolved (`None` for a
/// write without a door, written where named).
fn through_door(w: &FileWrite<'_>) -> Result<Option<PathBuf>, Refusal> {
    let Some(door) = w.door else {
        return Ok(None);
    };
    let rel = door.rel_of(w.target).ok_or_else(|| Refusal::Name {
        path: w.target.display().to_string(),
        why: "not below the tree's root",
    })?;
    door.resolve(&rel).map(|r| Some(r.path))
}

/// Create `dir` and the missing directories above it, adding each one
/// created to `created` (outermost first).
fn create_dirs(dir: &Path, created: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut missing = Vec::new();
    for d in dir.ancestors().filter(|d| !d.as_os_str().is_empty()) {
        if fs_err::symlink_metadata(d).is_ok() {
            break;
        }
        missing.push(d.to_path_buf());
    }
    for d in missing.into_iter().rev() {
        match fs_err::create_dir(&d) {
            Ok(()) => created.push(d),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Remove the directories a commit created, innermost first, as far as
/// they are empty.
fn remove_dirs(created: &[PathBuf]) {
    for d in created.iter().rev() {
        let _ = fs_err::remove_dir(d);
    }
}

/// Journal, stage, back up and rename (steps 1 to 5) once the directories
/// exist.
fn commit_staged(
    writes: &[FileWrite<'_>],
    mut slots: Vec<Slot>,
    dir: &Path,
    id: &str,
    faults: &dyn Faults,
    before_rename: BeforeRename<'_>,
) -> Result<usize, CommitError> {
    let dir = dir.to_path_buf();
    let staging = |target: &Path, action, source| CommitError::Staging {
        target: target.to_path_buf(),
        action,
        source,
    };
    let mut journal =
        Journal::create(&dir, id, &slots).map_err(|e| staging(&dir, "create the journal", e))?;

    // Stage and back up every file; nothing is changed yet.
    let stop = AtomicBool::new(false);
    let staged = in_parallel(slots.iter().zip(writes).enumerate(), |(n, (slot, w))| {
        if stop.load(Ordering::Relaxed) {
            return Err(None);
        }
        let result = stage(slot, w, n, faults);
        if result.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        result.map_err(Some)
    });
    let mut first_error = None;
    for (slot, result) in slots.iter_mut().zip(staged) {
        match result {
            Ok(ids) => (slot.staged, slot.original) = (Some(ids.0), ids.1),
            Err(Some(e)) if first_error.is_none() => first_error = Some(e),
            Err(_) => {}
        }
    }
    let abort = |slots: &[Slot], journal: Journal, error: CommitError| {
        // No target was renamed: removing the staged files and backups
        // restores everything.
        let plain: Vec<Slot> = slots
            .iter()
            .map(|s| Slot {
                staged: None,
                ..s.clone()
            })
            .collect();
        journal::undo(&plain);
        let _ = journal.remove();
        error
    };
    if let Some(e) = first_error {
        return Err(abort(&slots, journal, e));
    }
    if let Some(signal) = interrupt::received() {
        return Err(abort(&slots, journal, CommitError::Interrupted { signal }));
    }
    if let Err(e) = journal.staged(&slots) {
        return Err(abort(
            &slots,
            journal,
            staging(&dir, "write the journal", e),
        ));
    }
    if let Err(source) = before_rename() {
        return Err(abort(&slots, journal, CommitError::Aborted { source }));
    }

    // Rename every staged file over its target.
    let crashed = AtomicBool::new(false);
    // Test hook (tests/faults.rs): a pause between renames, for a SIGKILL.
    let pause = super::pause::Pause::from_env();
    let renamed = in_parallel(slots.iter().enumerate(), |(n, slot)| {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        if faults.at(Step::Crash, n).is_err() {
            crashed.store(true, Ordering::Relaxed);
            stop.store(true, Ordering::Relaxed);
            return None;
        }
        if let Some(signal) = interrupt::received() {
            stop.store(true, Ordering::Relaxed);
            return Some(Err(CommitError::Interrupted { signal }));
        }
        if let Some(pause) = &pause {
            pause.before_rename(); // test hook
        }
        let result = faults
            .at(Step::Rename, n)
            .and_then(|()| fs_err::rename(&slot.tmp, &slot.target))
            .map_err(|source| CommitError::RolledBack {
                target: slot.target.clone(),
                source,
            });
        if let Some(pause) = &pause {
            pause.after_rename(); // test hook
        }
        if result.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        Some(result)
    });
    if crashed.load(Ordering::Relaxed) {
        // A simulated kill: leave everything as it is on disk.
        return Ok(0);
    }
    let failure = renamed
        .into_iter()
        .flatten()
        .find_map(Result::err)
        .or_else(|| interrupt::received().map(|signal| CommitError::Interrupted { signal }));
    if let Some(failure) = failure {
        let undone = journal::undo(&slots);
        if undone.unrestored.is_empty() {
            let _ = journal.remove();
            return Err(failure);
        }
        // Keep the journal: the next run tries again.
        let (target, source) = match failure {
            CommitError::RolledBack { target, source } => (target, source),
            other => (
                dir.clone(),
                std::io::Error::new(std::io::ErrorKind::Interrupted, other.to_string()),
            ),
        };
        return Err(CommitError::RollbackFailed {
            target,
            source,
            unrestored: undone.unrestored,
        });
    }
    // Every target is new. From here on nothing can undo the commit; what
    // is left to do is cleaning up, and a failure there only leaves files
    // that the next run removes.
    if journal.committed().is_ok() {
        // Removing a backup frees the original's blocks (what the rename
        // did before backups existed): on several threads, as the renames.
        in_parallel(&slots, |slot| remove_if_present(&slot.bak));
        let _ = journal.remove();
    }
    Ok(slots.len())
}

/// A token that tells this commit's files from every other's: the process id
/// and a random number.
fn commit_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded from the OS's random source; a hasher of the
    // time makes two commits of one process differ too.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{}-{:08x}", std::process::id(), h.finish() & 0xffff_ffff)
}

/// Run `f` over `items` on up to [`WRITERS`] threads; results keep the
/// input order.
fn in_parallel<T, R, F>(items: impl IntoIterator<Item = T>, f: F) -> Vec<R>
where
    T: Send,
    R: Send,
    F: Fn(T) -> R + Sync,
{
    crate::pool::map(items, WRITERS, f)
}

/// Stage `w` into `slot.tmp` and back up the original into `slot.bak`;
/// returns the identities of the staged file and of the original.
fn stage(
    slot: &Slot,
    w: &FileWrite<'_>,
    n: usize,
    faults: &dyn Faults,
) -> Result<(journal::FileId, Option<journal::FileId>), CommitError> {
    let fail = |action, source| CommitError::Staging {
        target: w.target.to_path_buf(),
        action,
        source,
    };
    if let Some(signal) = interrupt::received() {
        return Err(CommitError::Interrupted { signal });
    }
    faults
        .at(Step::Stage, n)
        .map_err(|e| fail("write a temporary file", e))?;
    let mut file = create_new(&slot.tmp).map_err(|e| fail("create a temporary file", e))?;
    file.write_all(w.bytes).map_err(|e| fail("write", e))?;
    let original = w
        .permissions_from
        .into_iter()
        .chain([w.target])
        .find_map(|p| fs_err::metadata(p).ok());
    let staged_meta = file
        .metadata()
        .map_err(|e| fail("read the temporary file's metadata", e))?;
    #[cfg(unix)]
    if let Some(original) = &original {
        if slot.existed {
            sticky_refusal(&slot.target, &staged_meta, original)
                .map_err(|e| fail("replace it", e))?;
        }
        keep_owner(&file, &staged_meta, original);
    }
    // The permissions of the file this one replaces (or of
    // `permissions_from`); a new file gets 0644 instead of 0600. Set after
    // the owner: a change of owner clears the set-id bits.
    let permissions = match &original {
        Some(m) => m.permissions(),
        None => new_file_permissions(&staged_meta),
    };
    file.set_permissions(permissions)
        .map_err(|e| fail("set permissions", e))?;
    file.sync_data().map_err(|e| fail("flush", e))?;
    let staged = id_of(&staged_meta);
    drop(file);
    let original = if slot.existed {
        backup(&slot.target, &slot.bak).map_err(|e| fail("keep a copy of the original", e))?
    } else {
        None
    };
    Ok((staged, original))
}

fn create_new(path: &Path) -> std::io::Result<fs_err::File> {
    let mut options = fs_err::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use fs_err::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// Keep the original's owner and group on the staged file, as far as the
/// process may (root may give a file to anyone; others may only choose
/// among their own groups): `sed -i` and editors do the same.
#[cfg(unix)]
fn keep_owner(file: &fs_err::File, staged: &std::fs::Metadata, original: &std::fs::Metadata) {
    use std::os::unix::fs::MetadataExt;
    if (staged.uid(), staged.gid()) == (original.uid(), original.gid()) {
        return;
    }
    if std::os::unix::fs::fchown(file.file(), Some(original.uid()), Some(original.gid())).is_err() {
        let _ = std::os::unix::fs::fchown(file.file(), None, Some(original.gid()));
    }
}

/// In a sticky directory (like `/tmp`), only the owner of a file or of the
/// directory (or root) may replace it. Known before anything is renamed, so
/// it is refused while staging, and the rename phase cannot fail for it.
#[cfg(unix)]
fn sticky_refusal(
    target: &Path,
    staged: &std::fs::Metadata,
    original: &std::fs::Metadata,
) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let me = staged.uid();
    if me == 0 || original.uid() == me {
        return Ok(());
    }
    let Some(dir) = target.parent() else {
        return Ok(());
    };
    let dir = fs_err::metadata(dir)?;
    if dir.permissions().mode() & 0o1000 != 0 && dir.uid() != me {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "the directory is sticky and the file belongs to another user",
        ));
    }
    Ok(())
}

/// Keep the original at `bak` (a hard link, or a copy where the filesystem
/// has none); returns its identity.
fn backup(target: &Path, bak: &Path) -> std::io::Result<Option<journal::FileId>> {
    let original = fs_err::symlink_metadata(target)?;
    if fs_err::hard_link(target, bak).is_err() {
        remove_if_present(bak)?;
        fs_err::copy(target, bak)?;
    }
    Ok(Some(id_of(&original)))
}

#[cfg(unix)]
fn new_file_permissions(_: &std::fs::Metadata) -> std::fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    std::fs::Permissions::from_mode(0o644)
}

#[cfg(not(unix))]
fn new_file_permissions(m: &std::fs::Metadata) -> std::fs::Permissions {
    m.permissions()
}

#[cfg(test)]
mod tests;
