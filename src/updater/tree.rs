//! Directory mode: source -> scan/resolve/rewrite (per file, in parallel)
//! -> report -> sink. Nothing is written until every file has been planned,
//! so an error leaves every file untouched.

use std::path::{Path, PathBuf};

use crate::policies::PolicyTable;
use crate::text::Position;
use crate::updater::plan::{self, Plan, PlanError};
use crate::updater::report::Report;
use crate::updater::scan::Layout;
use crate::updater::sink;
use crate::updater::source::dir::{self, Candidate, Skipped, WalkError};

/// A file whose content changes.
#[derive(Debug, Clone)]
pub struct FileUpdate {
    pub rel: String,
    /// Where it was read from.
    pub path: PathBuf,
    /// Where it is written in place.
    pub write_to: PathBuf,
    /// The original text (kept only when asked for, e.g. for diffs).
    pub old_text: Option<String>,
    pub new_text: String,
}

/// The plan for a whole tree.
#[derive(Debug, Default)]
pub struct TreePlan {
    pub report: Report,
    pub updates: Vec<FileUpdate>,
    pub skipped: Vec<Skipped>,
    /// Candidate files read, and how many of them were screened in.
    pub files_read: usize,
    pub files_screened: usize,
}

/// A failure that stops the run before anything is written.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error(transparent)]
    Walk(#[from] WalkError),
    #[error("{path}: cannot read: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Plan {
        path: String,
        #[source]
        source: PlanError,
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

/// Read `path` and return its bytes if they mention `$imagepolicy`.
fn read_screened(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    BUFFER.with_borrow_mut(|buf| {
        let mut file = std::fs::File::open(path)?;
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
        Ok(crate::updater::scan::marker::contains_marker_key(bytes).then(|| bytes.to_vec()))
    })
}

fn plan_file(candidate: &Candidate, table: &PolicyTable, keep_old: bool) -> Option<FileResult> {
    let bytes = match read_screened(&candidate.path) {
        Ok(Some(b)) => b,
        Ok(None) => return None,
        Err(e) => return Some(FileResult::Unreadable(e)),
    };
    Some(plan_bytes(bytes, table, keep_old))
}

fn plan_bytes(bytes: Vec<u8>, table: &PolicyTable, keep_old: bool) -> FileResult {
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
    match plan::plan(&text, Layout::Documents, table) {
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
/// place (symlinks to outside the root), with a warning.
///
/// # Errors
/// When the tree cannot be walked or a file cannot be read.
pub fn plan_tree(
    root: &Path,
    table: &PolicyTable,
    keep_old: bool,
    writing_in_place: bool,
) -> Result<TreePlan, TreeError> {
    let walked = dir::walk(root, |c| {
        plan_file(c, table, keep_old).map(|r| (r, c.clone()))
    })?;
    let mut tree = TreePlan {
        report: Report::new(table),
        skipped: walked.skipped,
        files_read: walked.candidates,
        ..TreePlan::default()
    };
    for (rel, (result, candidate)) in walked.results {
        match result {
            FileResult::Unreadable(source) => {
                return Err(TreeError::Read {
                    path: candidate.path.display().to_string(),
                    source,
                });
            }
            FileResult::Skip { position, message } => {
                tree.files_screened += 1;
                tree.report.warn(&rel, position, &message);
            }
            FileResult::Planned { mut plan, old } => {
                tree.files_screened += 1;
                let Some(new_text) = plan.new_text.take() else {
                    tree.report.add_plan(&rel, &plan);
                    continue;
                };
                let write_to = match (&candidate.write_to, writing_in_place) {
                    (Ok(p), _) => p.clone(),
                    (Err(_), false) => candidate.path.clone(),
                    (Err(why), true) => {
                        plan.changes.clear();
                        tree.report.add_plan(&rel, &plan);
                        tree.report.warn(&rel, Position { line: 1, column: 1 }, why);
                        continue;
                    }
                };
                tree.report.add_plan(&rel, &plan);
                tree.updates.push(FileUpdate {
                    rel,
                    path: candidate.path,
                    write_to,
                    old_text: old,
                    new_text,
                });
            }
        }
    }
    tree.report.sort();
    Ok(tree)
}

/// Where updated files go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    InPlace,
    /// Under this directory, at each file's relative path.
    Under(PathBuf),
}

/// Write every update, plus `extra` files (the report, emitted policies):
/// all are staged and flushed, then renamed (see `sink::dir`).
///
/// # Errors
/// The first IO error; if it happens while staging, nothing changed.
pub fn write_updates(
    updates: &[FileUpdate],
    destination: &Destination,
    extra: &[sink::dir::FileWrite<'_>],
) -> Result<usize, std::io::Error> {
    let targets: Vec<PathBuf> = updates
        .iter()
        .map(|u| match destination {
            Destination::InPlace => u.write_to.clone(),
            Destination::Under(dir) => dir.join(&u.rel),
        })
        .collect();
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
    sink::dir::write_all(&writes)
}
