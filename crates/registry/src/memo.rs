//! Documents by digest kept for the rest of a run, so that what one step
//! fetched (the gate's manifest and config for a created time, a digest's
//! manifest) is not fetched again by the next (provenance). Content
//! addressed, so never stale; on only when the caller asks
//! ([`ClientSettings::remember_documents`](crate::ClientSettings::remember_documents)).
//!
//! Bounded: documents over [`MAX_ENTRY`] bytes are not kept, and nothing more
//! is kept once [`MAX_TOTAL`] bytes are.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::transport::lock;

/// The largest document kept (manifests and configs are a few KiB).
pub(crate) const MAX_ENTRY: usize = 256 * 1024;
/// The most bytes kept in all.
pub(crate) const MAX_TOTAL: usize = 8 * 1024 * 1024;

/// A kept document: its media type (empty for a blob) and bytes.
#[derive(Debug, Clone)]
pub(crate) struct Kept {
    pub media_type: String,
    pub bytes: Arc<Vec<u8>>,
}

/// Kept documents by `(repository, digest)`, and the bytes they hold.
type Store = (HashMap<(String, String), Kept>, usize);

/// Documents by `(repository, digest)`.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    inner: Mutex<Store>,
}

impl Memo {
    pub(crate) fn get(&self, repository: &str, digest: &str) -> Option<Kept> {
        lock(&self.inner)
            .0
            .get(&(repository.to_owned(), digest.to_owned()))
            .cloned()
    }

    pub(crate) fn put(&self, repository: &str, digest: &str, media_type: &str, bytes: &[u8]) {
        if bytes.len() > MAX_ENTRY {
            return;
        }
        let mut guard = lock(&self.inner);
        let (map, total) = &mut *guard;
        if *total + bytes.len() > MAX_TOTAL {
            return;
        }
        let key = (repository.to_owned(), digest.to_owned());
        if map.contains_key(&key) {
            return;
        }
        *total += bytes.len();
        map.insert(
            key,
            Kept {
                media_type: media_type.to_owned(),
                bytes: Arc::new(bytes.to_vec()),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded() {
        let memo = Memo::default();
        memo.put("r", "sha256:a", "m", b"abc");
        assert_eq!(memo.get("r", "sha256:a").unwrap().bytes.as_slice(), b"abc");
        assert!(memo.get("other", "sha256:a").is_none());
        memo.put("r", "sha256:big", "m", &vec![0; MAX_ENTRY + 1]);
        assert!(memo.get("r", "sha256:big").is_none());
        for i in 0..(MAX_TOTAL / MAX_ENTRY) {
            memo.put("r", &format!("sha256:{i}"), "m", &vec![0; MAX_ENTRY]);
        }
        assert!(memo.get("r", "sha256:0").is_some());
        let last = MAX_TOTAL / MAX_ENTRY - 1;
        assert!(memo.get("r", &format!("sha256:{last}")).is_none());
    }
}
