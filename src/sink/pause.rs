//! **Test hook, not a feature**: stops a commit in the middle of its renames
//! so that `tests/faults.rs` can SIGKILL the process exactly there and prove
//! that the next run rolls the renames back.
//!
//! With [`VARIABLE`] set to `N:FILE`, a commit renames `N` of its files,
//! waits for those renames to finish, creates `FILE` (the signal to the
//! test that the tree now holds exactly `N` new files and a journal that
//! says "staged"), and then holds every further rename back until the
//! process is killed, for at most [`HOLD`] (after which the commit goes on
//! as usual, so a stray variable cannot hang a run for ever). Without the
//! variable (always, outside tests) a commit reads it once and nothing else
//! changes. It exists because a kill timed from outside can land before or
//! after the renames, never provably in them.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// `N:FILE`: pause after `N` renames and create `FILE`.
pub(crate) const VARIABLE: &str = "IMAGE_UPDATE_TEST_PAUSE_RENAMES";

/// The longest a commit is held.
const HOLD: Duration = Duration::from_secs(600);

/// The pause a commit makes, when [`VARIABLE`] asks for one.
pub(crate) struct Pause {
    after: usize,
    signal: PathBuf,
    started: AtomicUsize,
    finished: AtomicUsize,
}

impl Pause {
    /// The pause [`VARIABLE`] asks for, if it is set and well formed.
    pub(crate) fn from_env() -> Option<Pause> {
        let value = std::env::var_os(VARIABLE)?;
        let value = value.to_str()?;
        let (after, signal) = value.split_once(':')?;
        Some(Pause {
            after: after.parse().ok()?,
            signal: PathBuf::from(signal),
            started: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
        })
    }

    /// Before a rename: the first `N` go ahead; the one after them waits
    /// for them, signals, and holds; later ones hold.
    pub(crate) fn before_rename(&self) {
        let k = self.started.fetch_add(1, Ordering::SeqCst);
        if k < self.after {
            return;
        }
        let start = Instant::now();
        if k == self.after {
            while self.finished.load(Ordering::SeqCst) < self.after && start.elapsed() < HOLD {
                std::thread::sleep(Duration::from_millis(1));
            }
            let _ = fs_err::write(&self.signal, format!("{}\n", self.after));
        }
        while start.elapsed() < HOLD {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// After a rename.
    pub(crate) fn after_rename(&self) {
        self.finished.fetch_add(1, Ordering::SeqCst);
    }
}
