//! The updater over a directory tree (or one file): walk the candidate
//! files, plan each one (in parallel), and write the changed ones.
//!
//! Nothing is written until every file has been planned, so an error leaves
//! every file untouched; the writes themselves are one all-or-nothing commit
//! (`sink::dir`). A run holds the tree's lock ([`prepare`]) from before the
//! first read until after the last write.
//!
//! Every candidate is read with a size cap (`--max-file-size`); a file in
//! UTF-16 or UTF-32 (told by its first bytes) is not read as YAML: a warning
//! says so when it mentions `$imagepolicy`, a note (`-v`) otherwise.

use std::path::{Path, PathBuf};

use crate::input::{ReadError, SizeLimit, WideEncoding};
use crate::outcome::FileUpdate;
use crate::policies::PolicyTable;
use crate::sink;
use crate::text::Position;
use crate::updater::plan::{self, Plan, PlanError, PlanOptions, Planned};
use crate::updater::scan::Layout;
use crate::walk::{self as dir, Candidate, Skipped, WalkError};

/// What became of one screened file.
#[derive(Debug)]
pub(crate) enum FileOutcome {
    /// Planned: its changes and warnings, and the update when it changes
    /// and may be written.
    Planned {
        planned: Planned,
        update: Option<FileUpdate>,
        /// Why the changes cannot be written (a symlink to outside the
        /// root); its changes are then dropped.
        refused: Option<String>,
    },
    /// Not planned (not UTF-8, not YAML): why, and where.
    Skipped { position: Position, message: String },
}

/// The plan of a whole tree.
#[derive(Debug, Default)]
pub(crate) struct TreePlan {
    /// Every screened file, by relative path, in path order.
    pub files: Vec<(String, FileOutcome)>,
    /// Files skipped before reading (dangling symlinks...).
    pub skipped: Vec<Skipped>,
    /// Candidate files read, and how many of them were screened in.
    pub files_read: usize,
    pub files_screened: usize,
    /// The UTF-8 texts [`TreeOptions::keep`] asked for.
    pub kept: Vec<KeptText>,
}

/// A text a walk kept for the Argo CD write-back.
#[derive(Debug)]
pub(crate) struct KeptText {
    /// Path relative to the walk's base directory.
    pub rel: String,
    pub text: String,
    /// The walk saw a regular file there (not a symlink): it is written where it is named.
    pub regular: bool,
}

/// A failure that stops the run before anything is written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TreeError {
    #[error(transparent)]
    Walk(#[from] WalkError),
    /// A candidate could not be read, or is over the size limit.
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Lock(#[from] sink::lock::LockError),
}

enum FileResult {
    Planned {
        plan: Plan,
        old: Option<String>,
    },
    Unreadable(ReadError),
    Skip {
        position: Position,
        message: String,
    },
    /// Not read as YAML, for a reason worth a note (`-v`).
    Note(String),
}

/// What reading a candidate gave.
enum Screened {
    /// It mentions `$imagepolicy`: its bytes.
    Marked(Vec<u8>),
    Unmarked,
    /// Not a regular file (any more): skipped.
    NotRegular,
    /// UTF-16 or UTF-32 text; whether it mentions `$imagepolicy`.
    Wide(WideEncoding, bool),
}

thread_local! {
    /// Each walker thread reads every candidate into the same buffer: most
    /// files are screened out, so this saves an allocation, a size query and
    /// a free per file.
    static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Read `path` (at most `limit` bytes) and screen it for `$imagepolicy`;
/// its text too when `keep` asks for it (and it is UTF-8).
fn read_screened(
    path: &Path,
    rel: &str,
    regular: bool,
    limit: SizeLimit,
    keep: Option<Keep>,
) -> Result<(Screened, Option<String>), ReadError> {
    BUFFER.with_borrow_mut(|buf| {
        let Some(len) = crate::input::read_regular(path, regular, limit, buf)? else {
            return Ok((Screened::NotRegular, None));
        };
        let bytes = &buf[..len];
        if let Some(encoding) = WideEncoding::detect(bytes) {
            let text = encoding.decode(bytes);
            let marked = crate::updater::scan::marker::screen(text.as_bytes());
            return Ok((Screened::Wide(encoding, marked), None));
        }
        let kept = keep
            .filter(|keep| keep(rel, bytes))
            .and_then(|_| std::str::from_utf8(bytes).ok())
            .map(str::to_owned);
        let screened = if crate::updater::scan::marker::screen(bytes) {
            Screened::Marked(bytes.to_vec())
        } else {
            Screened::Unmarked
        };
        Ok((screened, kept))
    })
}

/// Plan one candidate; also returns its text when `keep` asks for it.
fn plan_file(
    candidate: &Candidate,
    table: &PolicyTable,
    options: TreeOptions,
) -> (Option<FileResult>, Option<String>) {
    match read_screened(
        &candidate.path,
        &candidate.rel,
        candidate.regular,
        options.max_file_size,
        options.keep,
    ) {
        Ok((screened, kept)) => (
            plan_screened(candidate, screened, table, options.plan, options.keep_old),
            kept,
        ),
        Err(e) => (Some(FileResult::Unreadable(e)), None),
    }
}

fn plan_screened(
    candidate: &Candidate,
    screened: Screened,
    table: &PolicyTable,
    options: PlanOptions,
    keep_old: bool,
) -> Option<FileResult> {
    let bytes = match screened {
        Screened::Marked(b) => b,
        Screened::Unmarked => return None,
        Screened::NotRegular => {
            return Some(FileResult::Note(
                "not a regular file (a FIFO, socket or device), so it is not read".to_owned(),
            ));
        }
        Screened::Wide(encoding, true) => {
            return Some(FileResult::Skip {
                position: Position { line: 1, column: 1 },
                message: format!(
                    "file is {} text, and only UTF-8 is read, so it is skipped; convert it to UTF-8 (e.g. with iconv) to have its markers updated",
                    encoding.name()
                ),
            });
        }
        Screened::Wide(encoding, false) => {
            return Some(FileResult::Note(format!(
                "{} text without markers, not read",
                encoding.name()
            )));
        }
    };
    if is_helm_template(&candidate.path) {
        let first = marker_offset(&bytes);
        let prefix = String::from_utf8_lossy(&bytes[..first]);
        return Some(FileResult::Skip {
            position: crate::text::position_of(&prefix, prefix.len()),
            message: "file is a Helm chart template (under templates/, next to Chart.yaml), \
                      so its markers are not applied: mark the chart's values.yaml instead"
                .to_owned(),
        });
    }
    Some(plan_bytes(bytes, table, options, keep_old))
}

/// Whether `path` lies under a Helm chart's `templates/` directory (one
/// whose parent holds `Chart.yaml`).
fn is_helm_template(path: &Path) -> bool {
    path.ancestors()
        .skip(1)
        .filter(|dir| dir.file_name().is_some_and(|n| n == "templates"))
        .filter_map(Path::parent)
        .any(|chart| chart.join("Chart.yaml").is_file())
}

/// Offset of the first `$imagepolicy` (any case) in `bytes`, or 0.
fn marker_offset(bytes: &[u8]) -> usize {
    let key = crate::updater::scan::marker::MARKER_KEY.as_bytes();
    memchr::memchr_iter(b'$', bytes)
        .find(|&i| {
            bytes
                .get(i..i + key.len())
                .is_some_and(|w| w.eq_ignore_ascii_case(key))
        })
        .unwrap_or(0)
}

fn plan_bytes(
    bytes: Vec<u8>,
    table: &PolicyTable,
    options: PlanOptions,
    keep_old: bool,
) -> FileResult {
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let bytes = e.into_bytes();
            let prefix = String::from_utf8_lossy(&bytes[..valid]);
            return FileResult::Skip {
                position: crate::text::position_of(&prefix, valid),
                message: "file is not valid UTF-8 here, so it is skipped".to_owned(),
            };
        }
    };
    match plan::plan(&text, Layout::Documents, table, options) {
        Ok(plan) => FileResult::Planned {
            old: (keep_old && plan.new_text.is_some()).then_some(text),
            plan,
        },
        Err(PlanError::Parse(e)) => FileResult::Skip {
            // The scanner always knows where it stopped.
            position: e.position.unwrap_or(Position { line: 1, column: 1 }),
            message: format!("file is not valid YAML, so it is skipped: {}", e.message),
        },
        Err(e) => FileResult::Skip {
            position: Position { line: 1, column: 1 },
            message: e.to_string(),
        },
    }
}

/// Whether the walk keeps a file's text (given its relative path and
/// bytes) for another reader: Argo CD's objects and write-back targets are
/// read from the same walk as the markers.
pub(crate) type Keep = fn(&str, &[u8]) -> bool;

/// How a tree is planned.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TreeOptions {
    /// How markers are planned (downgrades).
    pub plan: PlanOptions,
    /// Keep each changed file's old text (for a diff).
    pub keep_old: bool,
    /// The most bytes a candidate file may have.
    pub max_file_size: SizeLimit,
    /// Which texts to keep besides planning them ([`TreePlan::kept`]).
    pub keep: Option<Keep>,
}

/// Plan the updates of every candidate file under `root` (a directory or
/// one file).
///
/// # Errors
/// When the tree cannot be walked, or a file cannot be read or is over the
/// size limit.
pub(crate) fn plan_tree(
    root: &Path,
    table: &PolicyTable,
    options: TreeOptions,
) -> Result<TreePlan, TreeError> {
    let walked = dir::walk(root, |c| match plan_file(c, table, options) {
        (None, None) => None,
        (result, kept) => Some((result, kept, c.clone())),
    })?;
    let mut tree = TreePlan {
        skipped: walked.skipped,
        files_read: walked.candidates,
        ..TreePlan::default()
    };
    for (rel, (result, kept, candidate)) in walked.results {
        if let Some(text) = kept {
            tree.kept.push(KeptText {
                rel: rel.clone(),
                text,
                regular: candidate.regular,
            });
        }
        let Some(result) = result else { continue };
        let outcome = match result {
            FileResult::Unreadable(e) => return Err(TreeError::Read(e)),
            FileResult::Note(reason) => {
                tree.skipped.push(Skipped { rel, reason });
                continue;
            }
            FileResult::Skip { position, message } => FileOutcome::Skipped { position, message },
            FileResult::Planned { mut plan, old } => {
                // A file that resolves outside the root is written nowhere: neither in place
                // nor, with its outside content, under an output directory; a dry run says the
                // same as the run would.
                let (update, refused) = match (plan.new_text.take(), &candidate.write_to) {
                    (None, _) => (None, None),
                    (Some(new_text), Ok(_)) => (
                        Some(FileUpdate {
                            rel: rel.clone(),
                            path: candidate.path.clone(),
                            old_text: old,
                            new_text,
                            created: false,
                        }),
                        None,
                    ),
                    (Some(_), Err(why)) => {
                        plan.planned.changes.clear();
                        (None, Some(why.clone()))
                    }
                };
                FileOutcome::Planned {
                    planned: plan.planned,
                    update,
                    refused,
                }
            }
        };
        tree.files_screened += 1;
        tree.files.push((rel, outcome));
    }
    tree.skipped.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(tree)
}

/// A tree made ready for a run: locked, and cleaned of what a killed run
/// left.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// Held (never read) until the run's writes are done: dropping it
    /// unlocks the tree.
    pub _lock: sink::lock::TreeLock,
    /// The directory locked, where an in-place commit keeps its journal.
    pub dir: PathBuf,
    /// What was recovered, one sentence each.
    pub notes: Vec<String>,
    /// Originals that could not be put back, one sentence each.
    pub problems: Vec<String>,
}

/// Lock the tree at `path` (its base directory: `path`, or its parent when
/// it is a file): exclusively when the run writes it in place, shared
/// otherwise. A writing run then takes over the commits that killed runs
/// left in that directory (see `sink::dir::recover`) before anything is read.
///
/// # Errors
/// When the directory cannot be locked.
pub(crate) fn prepare(path: &Path, writes_in_place: bool) -> Result<Prepared, TreeError> {
    let dir = dir::base_dir(path);
    let lock = sink::lock::lock(&dir, writes_in_place)?;
    let recovered = if writes_in_place {
        sink::dir::recover(&dir)
    } else {
        sink::dir::Recovered {
            notes: sink::dir::interrupted(&dir)
                .into_iter()
                .map(|pid| {
                    format!(
                        "a run (process {pid}) was killed while writing here; the next run that writes in place puts its files back"
                    )
                })
                .collect(),
            problems: Vec::new(),
        }
    };
    Ok(Prepared {
        _lock: lock,
        dir,
        notes: recovered.notes,
        problems: recovered.problems,
    })
}

/// Where updated files are placed: in place, or under an output directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Placement {
    InPlace,
    /// Under this directory, at each file's relative path.
    Under(PathBuf),
}

impl Placement {
    /// Where `update` is written, as named (its door resolves it).
    #[must_use]
    pub(crate) fn target(&self, update: &FileUpdate) -> PathBuf {
        match self {
            Placement::InPlace => update.path.clone(),
            Placement::Under(dir) => dir.join(&update.rel),
        }
    }
}

/// Write every update through `door` (the tree's for an in-place run, the
/// output directory's otherwise), plus `extra` files (the report, emitted
/// policies), as one all-or-nothing commit (see `sink::dir`) whose journal
/// is kept in `journal_dir` (default: the first file's directory).
///
/// # Errors
/// [`sink::dir::CommitError`]: nothing was written, except when putting
/// back the originals failed too (the error names them).
pub(crate) fn write_updates<'a>(
    updates: impl IntoIterator<Item = &'a FileUpdate>,
    placement: &Placement,
    door: &sink::door::Door,
    extra: &[sink::dir::FileWrite<'_>],
    journal_dir: Option<&Path>,
    before_rename: sink::dir::BeforeRename<'_>,
) -> Result<(), sink::dir::CommitError> {
    let updates: Vec<&FileUpdate> = updates.into_iter().collect();
    let targets: Vec<PathBuf> = updates.iter().map(|u| placement.target(u)).collect();
    let writes: Vec<sink::dir::FileWrite<'_>> = updates
        .iter()
        .zip(&targets)
        .map(|(u, target)| sink::dir::FileWrite {
            target,
            bytes: u.new_text.as_bytes(),
            permissions_from: Some(&u.path),
            door: Some(door),
        })
        .chain(extra.iter().copied())
        .collect();
    sink::dir::write_all_then(&writes, journal_dir, before_rename)?;
    Ok(())
}
