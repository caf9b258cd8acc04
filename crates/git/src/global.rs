//! libgit2's process-wide options, set once before the first operation.
//!
//! git2 exposes these only as `unsafe fn`: they change libgit2's global
//! state without synchronisation. They matter to the Job, so this is the
//! one place in the workspace that allows `unsafe` code:
//!
//! * **timeouts**: without them a TCP connect is bounded only by the kernel
//!   and a stalled read not at all, and a Job could hang until Kubernetes
//!   kills it. Here a connect gives up after [`CONNECT_TIMEOUT`] and a read
//!   that receives nothing after [`READ_TIMEOUT`] (the transports read them
//!   through [`timeouts`]);
//! * **the transports**: HTTP(S) and SSH are ours (`transport`), registered
//!   with libgit2 here;
//! * **no user or system git configuration**: the Job must behave the same
//!   wherever it runs, whatever `~/.gitconfig` or `/etc/gitconfig` say
//!   (`url.*.insteadOf`, proxies, credential helpers).

use std::sync::OnceLock;
use std::time::Duration;

/// How long a connect may take, by default.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a read may wait for data, by default.
pub const READ_TIMEOUT: Duration = Duration::from_secs(120);

/// The timeouts the options will be set to, when changed before the first
/// operation.
static TIMEOUTS: std::sync::Mutex<(Duration, Duration)> =
    std::sync::Mutex::new((CONNECT_TIMEOUT, READ_TIMEOUT));

/// Use these connect and read timeouts. Only calls made before the first
/// git operation of the process count (the options are set once);
/// returns whether this one did.
pub fn set_timeouts(connect: Duration, read: Duration) -> bool {
    if INIT.get().is_some() {
        return false;
    }
    *TIMEOUTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = (connect, read);
    true
}

/// The outcome of setting the options (an error message when one failed;
/// operations go on with libgit2's defaults then, and the message is
/// logged once).
static INIT: OnceLock<Result<(), String>> = OnceLock::new();

/// Set the options, once per process, before any libgit2 operation of this
/// crate (every entry point calls it).
pub(crate) fn init() {
    let result = INIT.get_or_init(configure);
    if let Err(e) = result {
        tracing::debug!("libgit2 options not set: {e}");
    }
}

/// The connect and read timeouts in force.
pub(crate) fn timeouts() -> (Duration, Duration) {
    *TIMEOUTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[allow(unsafe_code)]
fn configure() -> Result<(), String> {
    // SAFETY: these functions write libgit2's global options and transport
    // table without locking. They run exactly once (`OnceLock`), and before this crate
    // makes any other libgit2 call: every entry point of the crate calls
    // `init` first, and no other crate of the workspace uses libgit2, so no
    // libgit2 operation can run concurrently with them.
    unsafe {
        for level in [
            git2::ConfigLevel::System,
            git2::ConfigLevel::XDG,
            git2::ConfigLevel::Global,
        ] {
            git2::opts::set_search_path(level, "").map_err(|e| e.to_string())?;
        }
        crate::transport::register().map_err(|e| e.to_string())?;
    }
    Ok(())
}
