//! Filesystems that fault trials need, and exactly why a machine lacks one.
//!
//! * [`immutable_dir`]: a fresh directory on a filesystem where `chattr +i`
//!   works (ext4, xfs, btrfs; not tmpfs or overlayfs, where containers and
//!   CI runners often keep `/tmp`). [`EXT4_DIR`] names a directory on such a
//!   filesystem; `.ci/run` loop-mounts an ext4 image and exports it. Without
//!   it, the system's temporary directory is tried.
//! * [`small_fs`]: an empty filesystem of at most [`SMALL_FS_MAX_BYTES`]
//!   that a trial may fill. [`SMALL_FS`] names its mount point (`.ci/run`
//!   loop-mounts a small ext4 image); without it, the trial mounts a tmpfs
//!   of its own, which needs root and permission to mount.
//!
//! When `.ci/run` cannot mount its images (no loop device, no permission),
//! it exports [`NO_MOUNT`] with mount's own message, and the trials are
//! ignored with it ([`Unmet::NotAllowed`]). Anything else that is missing is
//! an [`Unmet::Missing`]: a failure when `CI` is set.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::Unmet;

/// A directory on a filesystem where `chattr +i` works.
pub const EXT4_DIR: &str = "IMAGE_UPDATE_TEST_EXT4_DIR";
/// The mount point of a small, empty filesystem the trials may fill.
pub const SMALL_FS: &str = "IMAGE_UPDATE_TEST_SMALL_FS";
/// Why `.ci/run` could not mount the filesystems above.
pub const NO_MOUNT: &str = "IMAGE_UPDATE_TEST_NO_MOUNT";
/// The largest filesystem [`small_fs`] accepts: filling it must stay quick.
pub const SMALL_FS_MAX_BYTES: u64 = 64 << 20;

/// The effective user id of this process.
#[must_use]
pub fn uid() -> u32 {
    fs_err::metadata("/proc/self").map_or(u32::MAX, |m| m.uid())
}

/// [`Unmet::NotAllowed`] unless this process runs as root.
///
/// # Errors
/// When it does not.
pub fn root(what: &str) -> Result<(), Unmet> {
    match uid() {
        0 => Ok(()),
        uid => Err(Unmet::NotAllowed(format!(
            "{what} needs root (runs as uid {uid})"
        ))),
    }
}

/// The type of the filesystem holding `path` (`ext4`, `tmpfs`...), as
/// `stat -f` names it.
#[must_use]
pub fn filesystem_type(path: &Path) -> String {
    Command::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(path)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or_else(
            || "an unknown filesystem".to_owned(),
            |o| String::from_utf8_lossy(&o.stdout).trim().to_owned(),
        )
}

/// What `.ci/run` said when it could not mount, as a sentence's tail.
fn no_mount() -> Option<String> {
    std::env::var(NO_MOUNT).ok().filter(|v| !v.is_empty())
}

/// A fresh directory (removed on drop) on a filesystem where `chattr +i`
/// works for this process.
///
/// # Errors
/// Why there is none: `chattr` not installed, not root, or `chattr +i`
/// refused where it was tried (with `chattr`'s message and the
/// filesystem's type).
pub fn immutable_dir() -> Result<tempfile::TempDir, Unmet> {
    Unmet::programs(&["chattr"])?;
    root("chattr +i")?;
    let given = std::env::var_os(EXT4_DIR).filter(|v| !v.is_empty());
    let dir = match &given {
        Some(base) => tempfile::tempdir_in(base).map_err(|e| {
            Unmet::Missing(format!(
                "{EXT4_DIR}={}: cannot make a directory there: {e}",
                Path::new(base).display()
            ))
        })?,
        None => tempfile::tempdir()
            .map_err(|e| Unmet::Missing(format!("cannot make a temporary directory: {e}")))?,
    };
    let Err(refused) = probe_chattr(dir.path()) else {
        return Ok(dir);
    };
    let fs = filesystem_type(dir.path());
    let what = format!(
        "chattr +i is refused on {fs} at {}: {refused}",
        dir.path().display()
    );
    Err(match (&given, no_mount()) {
        (Some(_), _) => Unmet::Missing(format!("{what} (the directory {EXT4_DIR} names)")),
        (None, Some(why)) => Unmet::NotAllowed(format!(
            "{what}, and .ci/run could not mount an ext4 image: {why}"
        )),
        (None, None) => Unmet::Missing(format!(
            "{what}; set {EXT4_DIR} to a directory on ext4, xfs or btrfs (.ci/run mounts one)"
        )),
    })
}

/// `chattr +i` then `-i` on a new file in `dir`; chattr's message when it
/// is refused.
fn probe_chattr(dir: &Path) -> Result<(), String> {
    let file = dir.join("probe");
    fs_err::write(&file, "").map_err(|e| e.to_string())?;
    let out = Command::new("chattr")
        .arg("+i")
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run chattr: {e}"))?;
    let _ = Command::new("chattr").arg("-i").arg(&file).status();
    let _ = fs_err::remove_file(&file);
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}

/// A small, empty filesystem a trial may fill; emptied (or unmounted, when
/// the trial mounted it) on drop.
pub struct SmallFs {
    mount: PathBuf,
    /// The temporary mount point of a tmpfs this process mounted.
    own: Option<tempfile::TempDir>,
}

impl SmallFs {
    /// Its mount point.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.mount
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        if self.own.is_some() {
            let _ = Command::new("umount").arg(&self.mount).status();
        } else if let Ok(entries) = fs_err::read_dir(&self.mount) {
            for entry in entries.flatten() {
                let path = entry.path();
                if path.file_name().is_some_and(|n| n == "lost+found") {
                    continue;
                }
                if path.is_dir() {
                    let _ = fs_err::remove_dir_all(&path);
                } else {
                    let _ = fs_err::remove_file(&path);
                }
            }
        }
    }
}

/// Total bytes of the filesystem mounted at `path`, as `stat -f` counts
/// them.
fn filesystem_bytes(path: &Path) -> Result<u64, String> {
    let out = Command::new("stat")
        .args(["-f", "-c", "%b %S"])
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run stat: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut words = text.split_whitespace().map(str::parse::<u64>);
    match (words.next(), words.next()) {
        (Some(Ok(blocks)), Some(Ok(size))) if out.status.success() => Ok(blocks * size),
        _ => Err(format!(
            "stat -f {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// A small, empty filesystem: the one [`SMALL_FS`] names, or a 512 KiB
/// tmpfs this process mounts.
///
/// # Errors
/// Why there is none: [`SMALL_FS`] names something else than an empty
/// filesystem of at most [`SMALL_FS_MAX_BYTES`] ([`Unmet::Missing`]);
/// `mount` is not installed; not root, or the mount is refused (with
/// mount's message).
pub fn small_fs() -> Result<SmallFs, Unmet> {
    if let Some(mount) = std::env::var_os(SMALL_FS).filter(|v| !v.is_empty()) {
        let mount = PathBuf::from(mount);
        let wrong = |why: String| Unmet::Missing(format!("{SMALL_FS}={}: {why}", mount.display()));
        let bytes = filesystem_bytes(&mount).map_err(wrong)?;
        if bytes > SMALL_FS_MAX_BYTES {
            return Err(wrong(format!(
                "a filesystem of {bytes} bytes, more than the {SMALL_FS_MAX_BYTES} a trial may fill"
            )));
        }
        let parent = mount.parent().unwrap_or(Path::new("/"));
        let device = |p: &Path| fs_err::metadata(p).map(|m| m.dev()).ok();
        if device(&mount).is_none() || device(&mount) == device(parent) {
            return Err(wrong("not a mount point".to_owned()));
        }
        let entries: Vec<String> = fs_err::read_dir(&mount)
            .map_err(|e| wrong(e.to_string()))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != "lost+found")
            .collect();
        if !entries.is_empty() {
            return Err(wrong(format!("not empty: {entries:?}")));
        }
        return Ok(SmallFs { mount, own: None });
    }
    Unmet::programs(&["mount", "umount"])?;
    root("mounting a tmpfs")?;
    let own = tempfile::tempdir()
        .map_err(|e| Unmet::Missing(format!("cannot make a mount point: {e}")))?;
    let out = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=512k", "tmpfs"])
        .arg(own.path())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Unmet::Missing(format!("cannot run mount: {e}")))?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        let mut why = format!("mount -t tmpfs is refused: {said}");
        if let Some(ci) = no_mount() {
            why.push_str(&format!(
                ", and .ci/run could not mount a small ext4 image: {ci}"
            ));
        }
        return Err(Unmet::NotAllowed(why));
    }
    Ok(SmallFs {
        mount: own.path().to_path_buf(),
        own: Some(own),
    })
}
