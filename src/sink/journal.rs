//! The journal of one commit: which files it writes, the identity (device
//! and inode) of each staged file and of each original, and whether it
//! finished. It lives beside the files as `.image-update.<pid>-<token>.journal`
//! and is locked (`flock`) by its run for as long as the run lives.
//!
//! With it, any later run can prove what a dead run left: a journal whose
//! lock it can take belongs to a run that is gone, and the only files it
//! touches are the ones that journal names (`.image-update.<id>.<n>.tmp`,
//! `.image-update.<id>.<n>.orig`) and targets whose inode is the one the run
//! staged. Everything else is left alone.
//!
//! The format is JSON lines, one step per line, readable by a person who
//! has to clean up by hand:
//!
//! ```text
//! {"step":"begin","pid":4242,"id":"4242-9f3a0c1d"}
//! {"step":"target","n":0,"path":"/repo/apps/web.yaml","existed":true}
//! {"step":"staged","n":0,"staged":[2049,1311],"original":[2049,977]}
//! {"step":"committed"}
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The prefix of every file a commit creates.
pub(super) const PREFIX: &str = ".image-update.";
const JOURNAL_SUFFIX: &str = ".journal";

/// Device and inode number: which file a name points at.
pub(super) type FileId = (u64, u64);

/// The identity of the file at `path` (not following a symlink), if any.
pub(super) fn file_id(path: &Path) -> Option<FileId> {
    fs_err::symlink_metadata(path).ok().map(|m| id_of(&m))
}

#[cfg(unix)]
pub(super) fn id_of(m: &std::fs::Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

#[cfg(not(unix))]
pub(super) fn id_of(m: &std::fs::Metadata) -> FileId {
    (0, m.len())
}

/// A path as the journal writes it: text when it is UTF-8, else its bytes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
enum PathText {
    Text(String),
    Bytes(Vec<u8>),
}

impl From<&Path> for PathText {
    fn from(p: &Path) -> Self {
        match p.to_str() {
            Some(s) => PathText::Text(s.to_owned()),
            #[cfg(unix)]
            None => {
                use std::os::unix::ffi::OsStrExt;
                PathText::Bytes(p.as_os_str().as_bytes().to_vec())
            }
            #[cfg(not(unix))]
            None => PathText::Text(p.to_string_lossy().into_owned()),
        }
    }
}

impl PathText {
    fn into_path(self) -> PathBuf {
        match self {
            PathText::Text(s) => PathBuf::from(s),
            #[cfg(unix)]
            PathText::Bytes(b) => {
                use std::os::unix::ffi::OsStringExt;
                PathBuf::from(std::ffi::OsString::from_vec(b))
            }
            #[cfg(not(unix))]
            PathText::Bytes(b) => PathBuf::from(String::from_utf8_lossy(&b).into_owned()),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "lowercase")]
enum Line {
    Begin {
        pid: u32,
        id: String,
    },
    Target {
        n: usize,
        path: PathText,
        existed: bool,
    },
    Staged {
        n: usize,
        staged: FileId,
        original: Option<FileId>,
    },
    Committed,
}

/// One file of a commit.
#[derive(Debug, Clone)]
pub(super) struct Slot {
    /// Absolute path of the file written.
    pub target: PathBuf,
    /// The staged new content, beside the target.
    pub tmp: PathBuf,
    /// The original, hard-linked (or copied) aside before the renames.
    pub bak: PathBuf,
    /// Whether the target existed when the commit began.
    pub existed: bool,
    /// The staged file's identity, once staged.
    pub staged: Option<FileId>,
    /// The original's identity, once backed up.
    pub original: Option<FileId>,
}

impl Slot {
    pub(super) fn new(id: &str, n: usize, target: PathBuf, existed: bool) -> Self {
        let dir = target.parent().map_or_else(PathBuf::new, Path::to_path_buf);
        Slot {
            tmp: dir.join(format!("{PREFIX}{id}.{n}.tmp")),
            bak: dir.join(format!("{PREFIX}{id}.{n}.orig")),
            target,
            existed,
            staged: None,
            original: None,
        }
    }
}

/// The journal file of a live commit (locked while it exists).
#[derive(Debug)]
pub(super) struct Journal {
    pub path: PathBuf,
    file: fs_err::File,
}

impl Journal {
    /// Create and lock the journal of commit `id` in `dir`, naming every
    /// target.
    pub(super) fn create(dir: &Path, id: &str, slots: &[Slot]) -> std::io::Result<Self> {
        let path = dir.join(format!("{PREFIX}{id}{JOURNAL_SUFFIX}"));
        let file = fs_err::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        file.file().lock()?;
        let mut journal = Journal { path, file };
        let mut text = line(&Line::Begin {
            pid: std::process::id(),
            id: id.to_owned(),
        });
        for (n, slot) in slots.iter().enumerate() {
            text.push_str(&line(&Line::Target {
                n,
                path: PathText::from(slot.target.as_path()),
                existed: slot.existed,
            }));
        }
        journal.append(&text)?;
        Ok(journal)
    }

    /// Record the identities of the staged files and originals, and flush
    /// the journal to disk: after this, renames may begin.
    pub(super) fn staged(&mut self, slots: &[Slot]) -> std::io::Result<()> {
        let mut text = String::new();
        for (n, slot) in slots.iter().enumerate() {
            if let Some(staged) = slot.staged {
                text.push_str(&line(&Line::Staged {
                    n,
                    staged,
                    original: slot.original,
                }));
            }
        }
        self.append(&text)?;
        self.file.sync_data()
    }

    /// Record that every rename was done.
    pub(super) fn committed(&mut self) -> std::io::Result<()> {
        self.append(&line(&Line::Committed))
    }

    fn append(&mut self, text: &str) -> std::io::Result<()> {
        self.file.write_all(text.as_bytes())
    }

    /// Remove the journal (the commit is over, and nothing of it is left).
    pub(super) fn remove(self) -> std::io::Result<()> {
        fs_err::remove_file(&self.path)
    }
}

fn line(l: &Line) -> String {
    // Serialising these plain structs cannot fail.
    let mut s = serde_json::to_string(l).unwrap_or_default();
    s.push('\n');
    s
}

/// A journal left by a run that is gone, read back.
#[derive(Debug)]
pub(super) struct Stale {
    pub path: PathBuf,
    pub pid: u32,
    pub slots: Vec<Slot>,
    pub committed: bool,
    /// Held while the stale journal is dealt with.
    pub file: fs_err::File,
}

/// The journals in `dir` whose runs are gone (their lock is free), read
/// back. Journals held by a live run, and files that do not read back as a
/// journal (a run killed while creating it), are left alone.
pub(super) fn stale(dir: &Path) -> Vec<Stale> {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !(name.starts_with(PREFIX) && name.ends_with(JOURNAL_SUFFIX)) {
            continue;
        }
        let path = entry.path();
        if let Some(stale) = read_stale(&path) {
            out.push(stale);
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn read_stale(path: &Path) -> Option<Stale> {
    use std::io::Read;
    let mut file = fs_err::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .ok()?;
    if file.file().try_lock().is_err() {
        return None;
    }
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    if !text.contains('\n') {
        return died_at_birth(path, file);
    }
    let mut lines = text.lines();
    let Ok(Line::Begin { pid, id }) = serde_json::from_str(lines.next()?) else {
        return None;
    };
    let expected = format!("{PREFIX}{id}{JOURNAL_SUFFIX}");
    if path.file_name().and_then(|n| n.to_str()) != Some(expected.as_str()) {
        return None;
    }
    let mut slots: Vec<Slot> = Vec::new();
    let mut committed = false;
    for l in lines {
        // A line cut short by a kill is the last one; it adds nothing.
        match serde_json::from_str::<Line>(l) {
            Ok(Line::Target { n, path, existed }) if n == slots.len() => {
                slots.push(Slot::new(&id, n, path.into_path(), existed));
            }
            Ok(Line::Staged {
                n,
                staged,
                original,
            }) => {
                if let Some(slot) = slots.get_mut(n) {
                    slot.staged = Some(staged);
                    slot.original = original;
                }
            }
            Ok(Line::Committed) => committed = true,
            _ => {}
        }
    }
    Some(Stale {
        path: path.to_path_buf(),
        pid,
        slots,
        committed,
        file,
    })
}

/// A journal whose first line was never completed: its run was killed
/// between creating it and writing its first line, so before it staged
/// anything. Only a name of this commit's own form
/// (`.image-update.<pid>-<token>.journal`) counts; it names no files.
fn died_at_birth(path: &Path, file: fs_err::File) -> Option<Stale> {
    let name = path.file_name()?.to_str()?;
    let id = name.strip_prefix(PREFIX)?.strip_suffix(JOURNAL_SUFFIX)?;
    let (pid, token) = id.split_once('-')?;
    if token.is_empty() || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(Stale {
        path: path.to_path_buf(),
        pid: pid.parse().ok()?,
        slots: Vec::new(),
        committed: false,
        file,
    })
}

/// A target that could not be put back, and where its original is.
#[derive(Debug, Clone)]
pub(crate) struct Unrestored {
    pub target: PathBuf,
    /// The original content, kept under this name.
    pub backup: PathBuf,
    pub reason: String,
}

/// What undoing or finishing a commit did.
#[derive(Debug, Default)]
pub(super) struct Undone {
    /// Targets put back to their original content.
    pub restored: usize,
    /// New files removed again.
    pub removed: usize,
    pub unrestored: Vec<Unrestored>,
}

/// Undo a commit that did not finish: every target the commit replaced gets
/// its original back, every file it created is removed, and its temporary
/// files and backups go. `renamed_hint` says that renames may have happened
/// (`staged` identities are known); without it, only temporary files and
/// backups are removed.
pub(super) fn undo(slots: &[Slot]) -> Undone {
    let mut out = Undone::default();
    for slot in slots {
        let now = file_id(&slot.target);
        match (slot.existed, slot.staged) {
            (true, Some(staged)) if file_id(&slot.bak).is_some() => {
                if now.is_none() || now == Some(staged) {
                    match fs_err::rename(&slot.bak, &slot.target) {
                        Ok(()) => out.restored += 1,
                        Err(e) => out.unrestored.push(Unrestored {
                            target: slot.target.clone(),
                            backup: slot.bak.clone(),
                            reason: e.to_string(),
                        }),
                    }
                } else if now == slot.original {
                    let _ = fs_err::remove_file(&slot.bak);
                } else {
                    out.unrestored.push(Unrestored {
                        target: slot.target.clone(),
                        backup: slot.bak.clone(),
                        reason: "the file was changed by someone else meanwhile".to_owned(),
                    });
                }
            }
            (false, Some(staged)) if now == Some(staged) => {
                if fs_err::remove_file(&slot.target).is_ok() {
                    out.removed += 1;
                }
            }
            _ => {
                let _ = remove_if_present(&slot.bak);
            }
        }
        let _ = remove_if_present(&slot.tmp);
    }
    out
}

/// Finish a commit whose renames were all done: remove its backups (and
/// any temporary file).
pub(super) fn finish(slots: &[Slot]) {
    for slot in slots {
        let _ = remove_if_present(&slot.bak);
        let _ = remove_if_present(&slot.tmp);
    }
}

pub(super) fn remove_if_present(path: &Path) -> std::io::Result<()> {
    match fs_err::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}
