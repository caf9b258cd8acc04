//! Atomic file writes: a temporary file in the same directory, flushed to
//! disk, given the original's permission bits, then renamed over the target.
//! A crash leaves either the old file or the new one, never a mix.

use std::io::Write;
use std::path::Path;

/// Write `bytes` to `target` atomically, copying permissions from `like`
/// when it exists.
///
/// # Errors
/// IO errors, with the path in the message.
pub fn write_atomic(
    target: &Path,
    bytes: &[u8],
    like: Option<&Path>,
) -> Result<(), std::io::Error> {
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let context = |e: std::io::Error, what: &str| {
        std::io::Error::new(e.kind(), format!("{}: {what}: {e}", target.display()))
    };
    std::fs::create_dir_all(dir).map_err(|e| context(e, "cannot create directory"))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".image-update-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| context(e, "cannot create a temporary file"))?;
    tmp.write_all(bytes)
        .map_err(|e| context(e, "cannot write"))?;
    tmp.as_file()
        .sync_data()
        .map_err(|e| context(e, "cannot flush"))?;
    if let Some(permissions) = like
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| m.permissions())
    {
        std::fs::set_permissions(tmp.path(), permissions)
            .map_err(|e| context(e, "cannot set permissions"))?;
    }
    tmp.persist(target)
        .map_err(|e| context(e.error, "cannot replace"))?;
    Ok(())
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
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&file, b"new", Some(&file)).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o640
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
