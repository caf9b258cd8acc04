//! What a one-shot process does with the large structures of its run at the end.
//!
//! The command line runs one operation and exits. Freeing what the operation built (hundreds of
//! thousands of allocations over a large tree: parsed Applications, texts, edits, changes) one
//! by one takes longer than the exit itself, which returns every page at once: a tenth of the
//! Argo CD benchmark's command, on its main thread after the work is done. A binary that exits
//! after its operation calls [`exiting`] once; [`release`] then leaves values to the exit.
//! Everywhere else (the library's callers, the tests, the Job's long-lived caller) values are
//! dropped as usual.
//!
//! Only plain data is released this way: nothing whose `Drop` does work that matters (a lock, a
//! temporary file, a buffered writer) is passed to [`release`].

use std::sync::atomic::{AtomicBool, Ordering};

static EXITING: AtomicBool = AtomicBool::new(false);

/// This process ends after its operation: [`release`] leaves values to the exit from now on.
pub(crate) fn exiting() {
    EXITING.store(true, Ordering::Relaxed);
}

/// Drop `value`, or leave it to the process's exit when [`exiting`] was called.
pub(crate) fn release<T>(value: T) {
    if EXITING.load(Ordering::Relaxed) {
        std::mem::forget(value);
    } else {
        drop(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn values_are_dropped_until_the_process_says_it_exits() {
        // `Arc` counts the clones alive: a dropped clone is gone from the count.
        let value = Arc::new(());
        release(Arc::clone(&value));
        assert_eq!(
            Arc::strong_count(&value),
            1,
            "released before exiting: dropped"
        );
        // From here on this test process leaks what it releases (every test that releases
        // something only leaks it).
        exiting();
        release(Arc::clone(&value));
        assert_eq!(
            Arc::strong_count(&value),
            2,
            "released when exiting: left to the exit"
        );
    }
}
