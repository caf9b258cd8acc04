//! The one door of a tree's files: every file a run writes under a tree (a marked file, an Argo CD
//! write-back target, a new override or values file, a file under `--output-dir`) is resolved and
//! checked here before it is staged, and every repository file read outside the tree's walk (a
//! write-back target, a file to create) is read here.
//!
//! A path is given relative to the door's root, with `/` separators. It is refused unless:
//! * every part is a plain name: not empty, not `.` or `..`, without NUL (and a file to create
//!   has no control characters in its name either);
//! * every directory on the way, after resolving symlinks, lies inside the root;
//! * the file is a regular file, or a symlink that resolves to a regular file inside the root
//!   (then its target is written: a link stays a link), or absent (then it is created, with its
//!   missing directories, inside the root).
//!
//! A FIFO, socket, device or directory is refused without being opened, and reads are bounded
//! ([`crate::input::read_regular`]: a size cap, a non-blocking open, regular files only). The
//! commit (`sink::dir`) resolves every tree file here once more just before staging it, so a
//! planner that forgot a check cannot write outside the tree; a staged file is created with
//! `O_EXCL` (which never follows a link) and renamed over its target (which replaces a link
//! rather than following it).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::input::{ReadError, SizeLimit};

/// Why a path of the tree is not read or written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refusal {
    /// Not a plain relative path.
    #[error("{path:?} is not a plain path inside the tree ({why}), so it is not written")]
    Name { path: String, why: &'static str },
    /// The path (a symlink on the way, or the file itself) resolves outside the root.
    #[error("{path} {}, so it is neither read nor written", through(.path, .link))]
    Outside { path: String, link: String },
    /// A part of the path that must be a directory is something else.
    #[error("{path}: {part} is not a directory, so it is not written")]
    NotDirectory { path: String, part: String },
    /// The file is not a regular file.
    #[error("{path} is {kind}, not a regular file, so it is neither read nor written")]
    NotRegular { path: String, kind: &'static str },
    /// A symlink whose target does not exist: writing it would create a file wherever it points.
    #[error("{path} is a dangling symlink, so it is not written")]
    Dangling { path: String },
    /// The file system failed.
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A read failed or went over the size limit.
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// A path the door let through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// Where to read and write it: the root as given, joined with the real path below it
    /// (every symlink on the way resolved).
    pub path: PathBuf,
    /// Whether the file exists (else it is created).
    pub exists: bool,
}

/// A tree's root, and the directories under it already known to lie inside it.
#[derive(Debug)]
pub(crate) struct Door {
    /// The root as given (paths handed out are under it, so messages keep the user's spelling).
    root: PathBuf,
    /// The root with every symlink resolved.
    canonical: PathBuf,
    /// Directories checked already, by the path reached (relative to the root, earlier parts
    /// resolved) to their real path: one `lstat` per directory per run, not per file.
    checked: Mutex<HashMap<PathBuf, PathBuf>>,
}

impl Door {
    /// The door of the tree at `root` (a directory, which may not exist yet: `--output-dir`
    /// creates it).
    ///
    /// # Errors
    /// `root` cannot be resolved (its nearest existing ancestor, for a root still to create).
    pub(crate) fn new(root: &Path) -> std::io::Result<Self> {
        let canonical = match fs_err::canonicalize(root) {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // The existing part resolved, the rest (plain names) appended.
                let mut missing = Vec::new();
                let mut existing = root;
                loop {
                    match existing.file_name() {
                        Some(name) if fs_err::symlink_metadata(existing).is_err() => {
                            missing.push(name.to_owned());
                            existing = existing.parent().unwrap_or(Path::new("."));
                            if existing.as_os_str().is_empty() {
                                existing = Path::new(".");
                            }
                        }
                        _ => break,
                    }
                }
                let mut c = fs_err::canonicalize(existing)?;
                c.extend(missing.iter().rev());
                c
            }
            Err(e) => return Err(e),
        };
        Ok(Self {
            root: root.to_path_buf(),
            canonical,
            checked: Mutex::default(),
        })
    }

    /// The root as given.
    #[must_use]
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// `path` (the root joined with a relative path, as the walk and the planners build them)
    /// relative to the root, with `/` separators; `None` when it is not below the root.
    #[must_use]
    pub(crate) fn rel_of(&self, path: &Path) -> Option<String> {
        let rel = match path.strip_prefix(&self.root) {
            Ok(rel) => rel,
            // `a.yaml` is below the root `.`.
            Err(_) if self.root == Path::new(".") && path.is_relative() => path,
            Err(_) => return None,
        };
        let mut out = String::new();
        for part in rel.components() {
            match part {
                std::path::Component::Normal(name) => {
                    if !out.is_empty() {
                        out.push('/');
                    }
                    out.push_str(name.to_str()?);
                }
                std::path::Component::CurDir => {}
                _ => return None,
            }
        }
        (!out.is_empty()).then_some(out)
    }

    /// Resolve `rel` for reading or writing (see the module documentation).
    ///
    /// # Errors
    /// [`Refusal`]: the path is not a plain one, leaves the tree, or is not a regular file.
    pub(crate) fn resolve(&self, rel: &str) -> Result<Resolved, Refusal> {
        let parts = plain_parts(rel)?;
        let Some((name, dirs)) = parts.split_last() else {
            return Err(Refusal::Name {
                path: rel.to_owned(),
                why: "empty",
            });
        };
        // The real directory (relative to the canonical root) reached so far.
        let mut real = PathBuf::new();
        let mut missing = false;
        for (i, part) in dirs.iter().enumerate() {
            real.push(part);
            if missing {
                continue;
            }
            if let Some(known) = self.checked(&real) {
                real = known;
                continue;
            }
            let reached = real.clone();
            let full = self.canonical.join(&real);
            let meta = match fs_err::symlink_metadata(&full) {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    // Created by the commit, below a directory known to be inside.
                    check_new_name(rel, &dirs[i..])?;
                    missing = true;
                    continue;
                }
                Err(source) => return Err(io(rel, source)),
            };
            if meta.file_type().is_symlink() {
                real = self.inside(rel, &full, &dirs[..=i].join("/"))?;
                if !fs_err::metadata(self.canonical.join(&real)).is_ok_and(|m| m.is_dir()) {
                    return Err(Refusal::NotDirectory {
                        path: rel.to_owned(),
                        part: dirs[..=i].join("/"),
                    });
                }
            } else if !meta.is_dir() {
                return Err(Refusal::NotDirectory {
                    path: rel.to_owned(),
                    part: dirs[..=i].join("/"),
                });
            }
            self.mark_checked(reached, &real);
        }
        real.push(name);
        if missing {
            check_new_name(rel, &[name])?;
            return Ok(self.resolved(&real, false));
        }
        let full = self.canonical.join(&real);
        let meta = match fs_err::symlink_metadata(&full) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                check_new_name(rel, &[name])?;
                return Ok(self.resolved(&real, false));
            }
            Err(source) => return Err(io(rel, source)),
        };
        let file_type = meta.file_type();
        if file_type.is_file() {
            return Ok(self.resolved(&real, true));
        }
        if !file_type.is_symlink() {
            return Err(Refusal::NotRegular {
                path: rel.to_owned(),
                kind: kind_of(&meta),
            });
        }
        let target = match fs_err::metadata(&full) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Refusal::Dangling {
                    path: rel.to_owned(),
                });
            }
            Err(source) => return Err(io(rel, source)),
        };
        let real = self.inside(rel, &full, rel)?;
        if !target.is_file() {
            return Err(Refusal::NotRegular {
                path: rel.to_owned(),
                kind: kind_of(&target),
            });
        }
        Ok(self.resolved(&real, true))
    }

    /// The text of `rel`, at most `limit` bytes; `None` when there is no such file.
    ///
    /// # Errors
    /// [`Refusal`]: the path is refused, cannot be read, is over the limit or is not UTF-8.
    pub(crate) fn read(&self, rel: &str, limit: SizeLimit) -> Result<Option<String>, Refusal> {
        let resolved = self.resolve(rel)?;
        if !resolved.exists {
            return Ok(None);
        }
        let Some(bytes) = crate::input::read_regular_owned(&resolved.path, false, limit)? else {
            // Swapped for something else since it was resolved.
            return Err(Refusal::NotRegular {
                path: rel.to_owned(),
                kind: "no longer a regular file",
            });
        };
        String::from_utf8(bytes).map(Some).map_err(|e| {
            Refusal::Read(ReadError::NotUtf8 {
                name: resolved.path.display().to_string(),
                offset: e.utf8_error().valid_up_to(),
            })
        })
    }

    /// The real path of the symlink `full` relative to the canonical root, if it lies inside.
    fn inside(&self, rel: &str, full: &Path, link: &str) -> Result<PathBuf, Refusal> {
        let target = fs_err::canonicalize(full).map_err(|source| io(rel, source))?;
        match target.strip_prefix(&self.canonical) {
            Ok(real) => Ok(real.to_path_buf()),
            Err(_) => Err(Refusal::Outside {
                path: rel.to_owned(),
                link: link.to_owned(),
            }),
        }
    }

    fn resolved(&self, real: &Path, exists: bool) -> Resolved {
        Resolved {
            path: self.root.join(real),
            exists,
        }
    }

    fn checked(&self, reached: &Path) -> Option<PathBuf> {
        self.checked.lock().ok()?.get(reached).cloned()
    }

    fn mark_checked(&self, reached: PathBuf, real: &Path) {
        if let Ok(mut c) = self.checked.lock() {
            c.insert(reached, real.to_path_buf());
        }
    }
}

fn through(path: &str, link: &str) -> String {
    if path == link {
        "is a symlink that resolves outside the tree".to_owned()
    } else {
        format!("resolves outside the tree through the symlink {link}")
    }
}

/// Whether `rel` may name a file to create (a new item of a ResourceList, whose path annotation is
/// where `kpt fn sink` writes it): plain names, none with control characters.
///
/// # Errors
/// [`Refusal::Name`].
pub(crate) fn check_new_path(rel: &str) -> Result<(), Refusal> {
    let parts = plain_parts(rel)?;
    check_new_name(rel, &parts)
}

/// The parts of a relative path, each a plain name.
fn plain_parts(rel: &str) -> Result<Vec<&str>, Refusal> {
    let refuse = |why| Refusal::Name {
        path: rel.to_owned(),
        why,
    };
    if rel.starts_with('/') {
        return Err(refuse("absolute"));
    }
    if rel.contains('\0') {
        return Err(refuse("a NUL byte in a name"));
    }
    rel.split('/')
        .map(|part| match part {
            "" => Err(refuse("an empty name")),
            "." | ".." => Err(refuse("a `.` or `..` part")),
            _ => Ok(part),
        })
        .collect()
}

/// A file or directory to create must not have control characters in its name: they would reach
/// terminals, logs and commit listings.
fn check_new_name(rel: &str, parts: &[&str]) -> Result<(), Refusal> {
    if parts
        .iter()
        .any(|p| p.chars().any(|c| c.is_control() || is_bidi_control(c)))
    {
        return Err(Refusal::Name {
            path: rel.to_owned(),
            why: "a control character in the name of a file to create",
        });
    }
    Ok(())
}

/// The Unicode controls that reorder text on display (embeddings, overrides, isolates).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device";
        }
    }
    if meta.is_dir() {
        "a directory"
    } else {
        "something else"
    }
}

fn io(rel: &str, source: std::io::Error) -> Refusal {
    Refusal::Io {
        path: rel.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests;
