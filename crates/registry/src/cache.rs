//! On-disk caches: tag lists with a TTL ([`TagCache`]), and signature
//! documents by digest ([`DigestCache`]), which never go stale.
//!
//! One JSON file per repository under `<cache_dir>/tags/`, named after the
//! SHA-256 of the canonical repository name. Files are written to a temporary
//! file in the same directory and renamed into place, so readers never see a
//! half-written file. A file that cannot be read or parsed is ignored with a
//! warning; the cache is never a reason to fail.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Entry {
    version: u32,
    repository: String,
    fetched_at: u64,
    tags: Vec<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct TagCache {
    dir: PathBuf,
    ttl: Duration,
}

impl TagCache {
    pub(crate) fn new(dir: &Path, ttl: Duration) -> Self {
        Self {
            dir: dir.join("tags"),
            ttl,
        }
    }

    pub(crate) fn path_for(&self, canonical: &str) -> PathBuf {
        let hash = Sha256::digest(canonical.as_bytes());
        let hex: String = hash.iter().take(16).map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{hex}.json"))
    }

    /// The cached tags of `canonical`, if present, valid and younger than the TTL.
    pub(crate) fn get(&self, canonical: &str) -> Option<Vec<String>> {
        let path = self.path_for(canonical);
        let bytes = match fs_err::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!("ignoring tag cache file {}: {e}", path.display());
                return None;
            }
        };
        let entry: Entry = match serde_json::from_slice(&bytes) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!("ignoring corrupt tag cache file {}: {e}", path.display());
                return None;
            }
        };
        if entry.version != VERSION || entry.repository != canonical {
            tracing::warn!(
                "ignoring tag cache file {}: not for {canonical}",
                path.display()
            );
            return None;
        }
        let age = now_secs().saturating_sub(entry.fetched_at);
        (Duration::from_secs(age) < self.ttl).then_some(entry.tags)
    }

    /// Store `tags` for `canonical`. Failures are logged, not returned.
    pub(crate) fn put(&self, canonical: &str, tags: &[String]) {
        if let Err(e) = self.try_put(canonical, tags) {
            tracing::warn!("cannot write tag cache in {}: {e}", self.dir.display());
        }
    }

    fn try_put(&self, canonical: &str, tags: &[String]) -> std::io::Result<()> {
        fs_err::create_dir_all(&self.dir)?;
        let entry = Entry {
            version: VERSION,
            repository: canonical.to_owned(),
            fetched_at: now_secs(),
            tags: tags.to_vec(),
        };
        let json = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
        std::io::Write::write_all(&mut tmp, &json)?;
        tmp.as_file().sync_all()?;
        tmp.persist(self.path_for(canonical)).map_err(|e| e.error)?;
        Ok(())
    }
}

/// Signature documents (referrer manifests, signature and bundle blobs)
/// by content digest, under `<cache_dir>/sha256/<hex>`: content-addressed,
/// so an entry never goes stale, and every read is checked against its
/// digest (a file that does not match is ignored). As [`TagCache`], the
/// cache is never a reason to fail.
#[derive(Debug, Clone)]
pub(crate) struct DigestCache {
    dir: PathBuf,
}

impl DigestCache {
    pub(crate) fn new(dir: &Path) -> Self {
        Self {
            dir: dir.join("sha256"),
        }
    }

    fn path_for(&self, digest: &str) -> Option<PathBuf> {
        let hex = digest.strip_prefix("sha256:")?;
        (hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()))
        .then(|| self.dir.join(hex))
    }

    /// The document with `digest`, when cached (and at most `max` bytes).
    pub(crate) fn get(&self, digest: &str, max: u64) -> Option<Vec<u8>> {
        let path = self.path_for(digest)?;
        let file = match fs_err::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!("ignoring digest cache file: {e}");
                return None;
            }
        };
        let mut bytes = Vec::new();
        if let Err(e) =
            std::io::Read::read_to_end(&mut std::io::Read::take(file, max + 1), &mut bytes)
        {
            tracing::warn!("ignoring digest cache file {}: {e}", path.display());
            return None;
        }
        let hex: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if bytes.len() as u64 > max || format!("sha256:{hex}") != digest {
            tracing::warn!(
                "ignoring digest cache file {}: not its digest",
                path.display()
            );
            return None;
        }
        Some(bytes)
    }

    /// Store `bytes`, whose digest the caller checked. Failures are
    /// logged, not returned.
    pub(crate) fn put(&self, digest: &str, bytes: &[u8]) {
        let Some(path) = self.path_for(digest) else {
            return;
        };
        let written = fs_err::create_dir_all(&self.dir).and_then(|()| {
            let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
            std::io::Write::write_all(&mut tmp, bytes)?;
            tmp.persist(&path).map(drop).map_err(|e| e.error)
        });
        if let Err(e) = written {
            tracing::warn!("cannot write digest cache in {}: {e}", self.dir.display());
        }
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_ttl_and_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let cache = TagCache::new(dir.path(), Duration::from_secs(60));
        assert_eq!(cache.get("r.io/a"), None);
        cache.put("r.io/a", &["v1".to_owned(), "v2".to_owned()]);
        assert_eq!(
            cache.get("r.io/a"),
            Some(vec!["v1".to_owned(), "v2".to_owned()])
        );
        assert_eq!(cache.get("r.io/b"), None);
        // expired
        let expired = TagCache::new(dir.path(), Duration::ZERO);
        assert_eq!(expired.get("r.io/a"), None);
        // corrupt
        fs_err::write(cache.path_for("r.io/a"), b"{not json").unwrap();
        assert_eq!(cache.get("r.io/a"), None);
        cache.put("r.io/a", &["v3".to_owned()]);
        assert_eq!(cache.get("r.io/a"), Some(vec!["v3".to_owned()]));
        // no temp files left behind
        let names: Vec<_> = fs_err::read_dir(dir.path().join("tags")).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn unwritable_dir_is_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        fs_err::write(&file, b"x").unwrap();
        let cache = TagCache::new(&file, Duration::from_secs(60));
        cache.put("r.io/a", &["v1".to_owned()]);
        assert_eq!(cache.get("r.io/a"), None);
    }

    #[test]
    fn digests_round_trip_and_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DigestCache::new(dir.path());
        let body = b"{\"layers\":[]}";
        let hex: String = Sha256::digest(body)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let digest = format!("sha256:{hex}");
        assert_eq!(cache.get(&digest, 1024), None);
        cache.put(&digest, body);
        assert_eq!(cache.get(&digest, 1024).as_deref(), Some(&body[..]));
        // Over the size asked for: not used.
        assert_eq!(cache.get(&digest, 4), None);
        // Not a sha256 digest, or not lowercase hex: never a path.
        cache.put("sha512:ab", body);
        cache.put(&digest.to_uppercase(), body);
        assert_eq!(
            fs_err::read_dir(dir.path().join("sha256")).unwrap().count(),
            1
        );
        // A file that is not its digest's content is ignored.
        fs_err::write(dir.path().join("sha256").join(&hex), b"other").unwrap();
        assert_eq!(cache.get(&digest, 1024), None);
    }
}
