//! The updater over a directory tree (or one file): walk the candidate
//! files, plan each one (in parallel), and write the changed ones.
//!
//! Nothing is written until every file has been planned, so an error leaves
//! every file untouched.

use std::path::{Path, PathBuf};

use crate::policies::PolicyTable;
use crate::text::Position;
use crate::updater::plan::{self, Plan, PlanError, PlanOptions, Planned};
use crate::updater::scan::Layout;
use crate::updater::sink;
use crate::updater::source::dir::{self, Candidate, Skipped, WalkError};

/// A file whose content changes.
#[derive(Debug, Clone)]
pub struct FileUpdate {
    /// Path relative to the root, `/` separators.
    pub rel: String,
    /// Where it was read from.
    pub path: PathBuf,
    /// Where it is written in place (a symlink's target).
    pub write_to: PathBuf,
    /// The original text (kept only when asked for, e.g. for diffs).
    pub old_text: Option<String>,
    pub new_text: String,
}

/// What became of one screened file.
#[derive(Debug)]
pub enum FileOutcome {
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
pub struct TreePlan {
    /// Every screened file, by relative path, in path order.
    pub files: Vec<(String, FileOutcome)>,
    /// Files skipped before reading (dangling symlinks...).
    pub skipped: Vec<Skipped>,
    /// Candidate files read, and how many of them were screened in.
    pub files_read: usize,
    pub files_screened: usize,
}

impl TreePlan {
    /// The files that change.
    pub fn updates(&self) -> impl Iterator<Item = &FileUpdate> {
        self.files.iter().filter_map(|(_, f)| match f {
            FileOutcome::Planned { update, .. } => update.as_ref(),
            FileOutcome::Skipped { .. } => None,
        })
    }
}

/// A failure that stops the run before anything is written.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error(transparent)]
    Walk(#[from] WalkError),
    #[error("{path}: cannot read")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

enum FileResult {
    Planned { plan: Plan, old: Option<String> },
    Unreadable(std::io::Error),
    Skip { position: Position, message: String },
}

thread_local! {
    /// Each walker thread reads every candidate into the same buffer: most
    /// files are screened out, so this saves an allocation, a size query and
    /// a free per file.
    static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Read `path` and return its bytes if they may hold a marker
/// ([`crate::updater::scan::marker::screen`]).
fn read_screened(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    BUFFER.with_borrow_mut(|buf| {
        let mut file = fs_err::File::open(path)?;
        let mut len = 0;
        loop {
            if len == buf.len() {
                buf.resize((buf.len() * 2).max(64 * 1024), 0);
            }
            match file.read(&mut buf[len..]) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let bytes = &buf[..len];
        Ok(crate::updater::scan::marker::screen(bytes).then(|| bytes.to_vec()))
    })
}

fn plan_file(
    candidate: &Candidate,
    table: &PolicyTable,
    options: PlanOptions,
    keep_old: bool,
) -> Option<FileResult> {
    let bytes = match read_screened(&candidate.path) {
        Ok(Some(b)) => b,
        Ok(None) => return None,
        Err(e) => return Some(FileResult::Unreadable(e)),
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
        Err(PlanError::Parse { position, message }) => FileResult::Skip {
            position,
            message: format!("file is not valid YAML, so it is skipped: {message}"),
        },
        Err(e) => FileResult::Skip {
            position: Position { line: 1, column: 1 },
            message: e.to_string(),
        },
    }
}

/// Plan the updates of every candidate file under `root` (a directory or
/// one file). `writing_in_place` refuses files that cannot be written in
/// place (symlinks to outside the root).
///
/// # Errors
/// When the tree cannot be walked or a file cannot be read.
pub fn plan_tree(
    root: &Path,
    table: &PolicyTable,
    options: PlanOptions,
    keep_old: bool,
    writing_in_place: bool,
) -> Result<TreePlan, TreeError> {
    let walked = dir::walk(root, |c| {
        plan_file(c, table, options, keep_old).map(|r| (r, c.clone()))
    })?;
    let mut tree = TreePlan {
        skipped: walked.skipped,
        files_read: walked.candidates,
        ..TreePlan::default()
    };
    for (rel, (result, candidate)) in walked.results {
        let outcome = match result {
            FileResult::Unreadable(source) => {
                return Err(TreeError::Read {
                    path: candidate.path.display().to_string(),
                    source,
                });
            }
            FileResult::Skip { position, message } => FileOutcome::Skipped { position, message },
            FileResult::Planned { mut plan, old } => {
                let (update, refused) = match plan.new_text.take() {
                    None => (None, None),
                    Some(new_text) => match (&candidate.write_to, writing_in_place) {
                        (Ok(p), _) => (
                            Some(FileUpdate {
                                rel: rel.clone(),
                                path: candidate.path.clone(),
                                write_to: p.clone(),
                                old_text: old,
                                new_text,
                            }),
                            None,
                        ),
                        (Err(_), false) => (
                            Some(FileUpdate {
                                rel: rel.clone(),
                                path: candidate.path.clone(),
                                write_to: candidate.path.clone(),
                                old_text: old,
                                new_text,
                            }),
                            None,
                        ),
                        (Err(why), true) => {
                            plan.planned.changes.clear();
                            (None, Some(why.clone()))
                        }
                    },
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
    Ok(tree)
}

/// Where updated files go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    InPlace,
    /// Under this directory, at each file's relative path.
    Under(PathBuf),
}

impl Destination {
    /// Where `update` is written.
    #[must_use]
    pub fn target(&self, update: &FileUpdate) -> PathBuf {
        match self {
            Destination::InPlace => update.write_to.clone(),
            Destination::Under(dir) => dir.join(&update.rel),
        }
    }
}

/// Write every update, plus `extra` files (the report, emitted policies):
/// all are staged and flushed, then renamed (see `sink::dir`).
///
/// # Errors
/// The first IO error; if it happens while staging, nothing changed.
pub fn write_updates<'a>(
    updates: impl IntoIterator<Item = &'a FileUpdate>,
    destination: &Destination,
    extra: &[sink::dir::FileWrite<'_>],
) -> Result<Vec<PathBuf>, std::io::Error> {
    let updates: Vec<&FileUpdate> = updates.into_iter().collect();
    let targets: Vec<PathBuf> = updates.iter().map(|u| destination.target(u)).collect();
    let writes: Vec<sink::dir::FileWrite<'_>> = updates
        .iter()
        .zip(&targets)
        .map(|(u, target)| sink::dir::FileWrite {
            target,
            bytes: u.new_text.as_bytes(),
            permissions_from: Some(&u.path),
        })
        .chain(extra.iter().copied())
        .collect();
    sink::dir::write_all(&writes)?;
    Ok(writes.iter().map(|w| w.target.to_path_buf()).collect())
}
