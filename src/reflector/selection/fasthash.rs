//! A small, fast, non-cryptographic hasher for de-duplicating tags.
//!
//! Why: selection de-duplicates every listed tag and, with `filterTags`
//! extraction, every key. With the standard SipHash, hashing was about a
//! quarter of the time spent selecting from 100,000 tags. Tags are short
//! ASCII strings, and the multiply-rotate scheme below (the one used by
//! rustc's `FxHasher`) hashes them in a few nanoseconds.
//!
//! It is not resistant to deliberately colliding input. Colliding tags
//! would have to be pushed to the very repository being watched, and the
//! worst case is a slower selection, not a wrong one, so that trade is
//! acceptable here; do not reuse this hasher for data from arbitrary
//! sources.

use std::hash::{BuildHasherDefault, Hasher};

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// Multiply-rotate hasher; see the module docs.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct FastHasher {
    hash: u64,
}

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        // The length keeps zero-padded tails apart (`a` vs `a\0`).
        self.add(bytes.len() as u64);
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

/// `HashMap`/`HashSet` state using [`FastHasher`].
pub(super) type FastState = BuildHasherDefault<FastHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    #[test]
    fn distinguishes_short_tags_and_lengths() {
        let state = FastState::default();
        let tags = [
            "",
            "a",
            "a\0",
            "1.0.0",
            "1.0.0-rc.1",
            "v1.0.0",
            "12345678",
            "123456789",
        ];
        let hashes: HashSet<u64> = tags.iter().map(|t| state.hash_one(t)).collect();
        assert_eq!(hashes.len(), tags.len());
    }

    #[test]
    fn works_as_a_set() {
        let mut set: HashSet<String, FastState> = HashSet::default();
        for i in 0..10_000 {
            assert!(set.insert(format!("main-{i}")));
        }
        assert!(!set.insert("main-42".to_owned()));
        assert_eq!(set.len(), 10_000);
    }
}
