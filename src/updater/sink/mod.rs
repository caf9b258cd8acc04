//! Where bytes go: files on disk, written atomically.

pub mod dir;
