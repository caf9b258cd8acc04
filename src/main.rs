//! The `image-update` binary: choose the allocator's settings, set up logging, then run the
//! command line (`image_update::cli::main`), which prints the error once and chooses the exit
//! status.

use std::process::ExitCode;

use image_update::cli;

// The allocator is mimalloc. A run over a large tree makes hundreds of thousands of small
// allocations on every core; glibc's malloc grows each worker thread's heap a few pages at a
// time (an `mprotect` and its page faults per step, with TLB shootdowns across threads), which
// was a fifth of the CPU of `cargo bench --bench argocd`'s command. mimalloc's per-thread pages
// take the same run from 112 to 82 ms (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (`mi_option_t` in mimalloc.h: 15 in its v2, which the
/// `mimalloc` crate is built with here, and in its v3).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How the allocator treats memory that is freed.
///
/// The KRM function (`krm`) holds a whole ResourceList (and its output) in memory: there, peak
/// memory counts more than allocation speed (its benchmark's target is a peak RSS of 1.5x the
/// list). Its memory is backed by 4 KiB pages, not transparent huge pages (which mimalloc asks for
/// on its arenas, and which round a partly used 2 MiB page up to a whole one), and freed memory is
/// returned to the system at once instead of after a delay.
///
/// Every other mode keeps the memory it frees for its own later allocations: returning it to the
/// system (mimalloc does after 10 ms by default) splits the transparent huge pages it sits in, and
/// the next allocation there faults fresh zeroed pages back in. Each mode runs one operation and
/// exits, so its peak memory is the same either way; `cargo bench --bench argocd`'s command took
/// 72.5 ms instead of 76.1 (21 runs each, alternating).
fn configure_allocator(krm: bool) {
    // SAFETY: `mi_option_set` stores an option's value in mimalloc's option table (read when
    // memory is next purged); `prctl(PR_SET_THP_DISABLE)` sets a flag on this process's memory
    // map. Neither touches memory of ours; both run before any other thread exists.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, if krm { 0 } else { -1 });
        if krm {
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
        }
    }
}

fn main() -> ExitCode {
    configure_allocator(cli::runs_krm_function());
    // Library diagnostics (registry retries, skipped credential helpers,
    // unusable cache files) go to stderr, their values escaped as every line
    // there; `IMAGE_UPDATE_LOG=debug` shows more.
    let filter = tracing_subscriber::EnvFilter::try_from_env("IMAGE_UPDATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .fmt_fields(cli::log_fields())
        .with_env_filter(filter)
        .with_ansi(cli::log_color())
        .with_writer(cli::stderr)
        .without_time()
        .with_target(false)
        .init();
    cli::main()
}
