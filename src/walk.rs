//! Walk a directory (or take one file) and hand every candidate file to a
//! worker, in parallel.
//!
//! Candidates are files named `*.yaml`, `*.yml` or `Kustomization` (case
//! sensitive, as Flux). `.git` is never entered; `.sourceignore` files
//! (gitignore syntax) are honoured; `.gitignore` is not (Flux's source
//! controller does not either). Directory symlinks are never followed;
//! dangling symlinks are skipped; a file symlink is read through, and may be
//! written only when its target lies inside the root: PATH itself when it is
//! a directory, PATH's parent directory when it is a file (or a symlink to
//! one), the same base that relative paths are computed from. The link
//! itself stays a link: its target is written.
//!
//! Only regular files are read: a FIFO, socket or device named `*.yaml`
//! (or a symlink to one) is skipped with a note (`-v`), and files are opened
//! without blocking, so a FIFO swapped in after the walk looked cannot hang
//! the run either.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ignore::{WalkBuilder, WalkState};

/// A candidate file.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    /// Path relative to the root, with `/` separators.
    pub rel: String,
    /// Where to read it.
    pub path: PathBuf,
    /// Whether the walk saw it as a regular file itself (not a symlink).
    pub regular: bool,
    /// Where an update is written: the file itself, or a symlink's target
    /// inside the root; `Err` says why it cannot be written.
    pub write_to: Result<PathBuf, String>,
}

/// Something skipped on the way, for `-v`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub rel: String,
    pub reason: String,
}

/// A failure that stops the run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WalkError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Walk(String),
}

impl From<WalkError> for crate::error::Error {
    fn from(error: WalkError) -> Self {
        crate::error::Error::Other(Box::new(error))
    }
}

/// Whether a file name is a candidate for markers.
#[must_use]
pub(crate) fn is_candidate_name(name: &str) -> bool {
    name.ends_with(".yaml") || name.ends_with(".yml") || name == "Kustomization"
}

/// The base directory that relative paths are computed from.
#[must_use]
pub(crate) fn base_dir(root: &Path) -> PathBuf {
    if root.is_file() {
        // `a.yaml` has the parent `""`: the current directory.
        root.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    } else {
        root.to_path_buf()
    }
}

/// What a walk produced.
#[derive(Debug)]
pub(crate) struct Walked<T> {
    /// The workers' results, by relative path.
    pub results: Vec<(String, T)>,
    /// What was skipped, by relative path.
    pub skipped: Vec<Skipped>,
    /// Number of candidate files handed to the worker.
    pub candidates: usize,
}

/// Walk `root` and call `work` on every candidate, in parallel; the `Some`
/// results are returned sorted by relative path.
///
/// # Errors
/// When the root does not exist or the walk itself fails (e.g. a directory
/// that cannot be read).
pub(crate) fn walk<T, F>(root: &Path, work: F) -> Result<Walked<T>, WalkError>
where
    T: Send,
    F: Fn(&Candidate) -> Option<T> + Sync,
{
    let meta = fs_err::metadata(root).map_err(|source| WalkError::Io {
        path: root.display().to_string(),
        source,
    })?;
    let base = base_dir(root);
    let canonical_base = fs_err::canonicalize(&base).map_err(|source| WalkError::Io {
        path: base.display().to_string(),
        source,
    })?;
    let results: Mutex<Vec<(String, T)>> = Mutex::new(Vec::new());
    let skipped: Mutex<Vec<Skipped>> = Mutex::new(Vec::new());
    let errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let candidates = std::sync::atomic::AtomicUsize::new(0);
    let threads = crate::pool::cores();

    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .parents(false)
        .ignore(false)
        .git_ignore(false)
        .git_global(false)
        .git_exclude(false)
        .require_git(false)
        .follow_links(false)
        .threads(threads)
        .filter_entry(|e| !(e.file_name() == ".git" && e.file_type().is_some_and(|t| t.is_dir())));
    if meta.is_dir() {
        builder.add_custom_ignore_filename(".sourceignore");
    }
    builder.build_parallel().run(|| {
        Box::new(|entry| {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    push(&errors, e.to_string());
                    return WalkState::Continue;
                }
            };
            let Some(file_type) = entry.file_type() else {
                return WalkState::Continue;
            };
            let name = entry.file_name().to_string_lossy();
            if file_type.is_dir() || !is_candidate_name(&name) {
                return WalkState::Continue;
            }
            let path = entry.path().to_path_buf();
            let rel = relative(&base, &path);
            // The root is given by the user: see it as it is on disk (the
            // walker reports a symlinked root as what it points to).
            let is_symlink = if entry.depth() == 0 {
                fs_err::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink())
            } else {
                file_type.is_symlink()
            };
            if !is_symlink && !file_type.is_file() {
                push(
                    &skipped,
                    Skipped {
                        rel,
                        reason: "not a regular file (a FIFO, socket or device), so it is not read"
                            .to_owned(),
                    },
                );
                return WalkState::Continue;
            }
            let write_to = if is_symlink {
                match fs_err::metadata(&path) {
                    Err(_) => {
                        push(
                            &skipped,
                            Skipped {
                                rel,
                                reason: "dangling symlink".to_owned(),
                            },
                        );
                        return WalkState::Continue;
                    }
                    Ok(m) if m.is_dir() => {
                        push(
                            &skipped,
                            Skipped {
                                rel,
                                reason: "symlink to a directory".to_owned(),
                            },
                        );
                        return WalkState::Continue;
                    }
                    Ok(m) if !m.is_file() => {
                        push(
                            &skipped,
                            Skipped {
                                rel,
                                reason: "symlink to something that is not a regular file (a FIFO, socket or device), so it is not read".to_owned(),
                            },
                        );
                        return WalkState::Continue;
                    }
                    Ok(_) => match fs_err::canonicalize(&path) {
                        Ok(target) if target.starts_with(&canonical_base) => Ok(target),
                        Ok(target) => Err(format!(
                            "symlink target {} lies outside {}, so it is not written",
                            target.display(),
                            canonical_base.display()
                        )),
                        Err(e) => Err(format!("symlink target cannot be resolved: {e}")),
                    },
                }
            } else {
                Ok(path.clone())
            };
            let candidate = Candidate {
                rel,
                path,
                regular: !is_symlink,
                write_to,
            };
            candidates.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if let Some(result) = work(&candidate) {
                push(&results, (candidate.rel, result));
            }
            WalkState::Continue
        })
    });
    let errors = errors.into_inner().unwrap_or_default();
    if !errors.is_empty() {
        return Err(WalkError::Walk(errors.join("; ")));
    }
    let mut results = results.into_inner().unwrap_or_default();
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let mut skipped = skipped.into_inner().unwrap_or_default();
    skipped.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(Walked {
        results,
        skipped,
        candidates: candidates.into_inner(),
    })
}

fn push<V>(m: &Mutex<Vec<V>>, v: V) {
    if let Ok(mut guard) = m.lock() {
        guard.push(v);
    }
}

/// `path` relative to `base`, with `/` separators.
fn relative(base: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(base).unwrap_or(path);
    // One allocation per file: this runs for every file of the tree.
    let mut out = String::with_capacity(rel.as_os_str().len());
    for c in rel.components() {
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(&c.as_os_str().to_string_lossy());
    }
    out
}
