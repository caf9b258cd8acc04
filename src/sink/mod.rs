//! Where bytes go: files on disk, written all or nothing.
//!
//! * [`dir`]: the commit of a run's files (stage, back up, rename, roll
//!   back) and the recovery of a commit that was killed.
//! * [`lock`]: the advisory lock that serialises runs on one tree.
//! * `journal`: the record a commit keeps on disk so that a later run can
//!   prove which leftover files are its own and undo what it did.
//! * `interrupt`: SIGTERM, SIGINT and SIGHUP during a commit roll it back
//!   instead of killing the process half-way.
//! * `pause`: a test hook (`IMAGE_UPDATE_TEST_PAUSE_RENAMES`) that holds a
//!   commit between two renames, so that a test can kill it there.

pub(crate) mod dir;
pub(crate) mod door;
pub(crate) mod interrupt;
mod journal;
pub(crate) mod lock;
// Test hook only: lets tests/faults.rs kill a commit between two renames.
mod pause;
