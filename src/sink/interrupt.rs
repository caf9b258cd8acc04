//! SIGTERM, SIGINT and SIGHUP while files are being committed.
//!
//! Outside a commit these signals keep their default action (the process
//! ends; nothing is on disk yet). While at least one [`Guard`] is alive the
//! signal is only recorded, and the commit polls [`received`] between steps:
//! it then rolls back, removes its temporary files and reports the signal,
//! so a terminated run leaves every file as it was and nothing behind.
//!
//! `signal-hook` installs the handlers (the workspace forbids unsafe code);
//! they only store into atomics, which is async-signal-safe.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The signals a commit defers.
const SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGHUP,
];

struct State {
    /// True when no commit runs: the signal's default action applies.
    idle: Arc<AtomicBool>,
    /// The last deferred signal, 0 for none.
    received: Arc<AtomicUsize>,
    /// Commits running in this process.
    active: Mutex<usize>,
}

fn state() -> Option<&'static State> {
    static STATE: OnceLock<Option<State>> = OnceLock::new();
    STATE
        .get_or_init(|| {
            let state = State {
                idle: Arc::new(AtomicBool::new(true)),
                received: Arc::new(AtomicUsize::new(0)),
                active: Mutex::new(0),
            };
            for signal in SIGNALS {
                // The default action must be registered first: it runs (and
                // ends the process) only while no commit is running.
                let registered = signal_hook::flag::register_conditional_default(
                    signal,
                    Arc::clone(&state.idle),
                )
                .and_then(|_| {
                    signal_hook::flag::register_usize(
                        signal,
                        Arc::clone(&state.received),
                        usize::try_from(signal).unwrap_or(usize::MAX),
                    )
                });
                if let Err(e) = registered {
                    tracing::warn!(
                        "cannot handle signal {signal}: a signal during a commit ends the process: {e}"
                    );
                    return None;
                }
            }
            Some(state)
        })
        .as_ref()
}

/// While alive, the deferred signals are recorded instead of ending the
/// process.
pub(crate) struct Guard {
    _private: (),
}

/// Defer the signals until the returned guard is dropped.
pub(crate) fn guard() -> Guard {
    if let Some(state) = state() {
        let mut active = state
            .active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *active == 0 {
            state.received.store(0, Ordering::SeqCst);
        }
        *active += 1;
        state.idle.store(false, Ordering::SeqCst);
    }
    Guard { _private: () }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(state) = state() {
            let mut active = state
                .active
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *active = active.saturating_sub(1);
            if *active == 0 {
                state.idle.store(true, Ordering::SeqCst);
            }
        }
    }
}

/// The signal received since the first live guard was taken, if any.
pub(crate) fn received() -> Option<i32> {
    let state = state()?;
    match state.received.load(Ordering::SeqCst) {
        0 => None,
        n => i32::try_from(n).ok(),
    }
}

/// The conventional name of `signal`.
#[must_use]
pub(crate) fn name(signal: i32) -> String {
    signal_hook::low_level::signal_name(signal)
        .map_or_else(|| format!("signal {signal}"), str::to_owned)
}
