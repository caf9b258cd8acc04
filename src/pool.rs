//! One bounded worker pool for the blocking work of a run: staging and
//! renaming files, listing repositories, reading image creation times.
//!
//! The work is IO-bound (a flush, an HTTP round trip), so callers ask for
//! more threads than cores; each call bounds its own concurrency. Written
//! by hand because it is a few lines over `std::thread::scope`: a thread
//! pool crate would add a global pool and a dependency for nothing else.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The number of cores this process may run on (2 when that cannot be told): the thread count of
/// CPU-bound work (parsing, planning).
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, std::num::NonZero::get)
}

/// Run `f` on every item with at most `threads` threads at once (on the
/// calling thread when there is at most one item); results come back in
/// input order. Items are taken one at a time, so slow ones do not hold up
/// a whole share.
pub(crate) fn map<T, R, F>(items: impl IntoIterator<Item = T>, threads: usize, f: F) -> Vec<R>
where
    T: Send,
    R: Send,
    F: Fn(T) -> R + Sync,
{
    let items: Vec<T> = items.into_iter().collect();
    let workers = threads.max(1).min(items.len());
    if workers <= 1 {
        return items.into_iter().map(f).collect();
    }
    let len = items.len();
    let inputs: Vec<Mutex<Option<T>>> = items.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let outputs: Vec<Mutex<Option<R>>> = (0..len).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let (Some(input), Some(output)) = (inputs.get(i), outputs.get(i)) else {
                        break;
                    };
                    let Some(item) = take(input) else {
                        continue;
                    };
                    let result = f(item);
                    *output
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(result);
                }
            });
        }
    });
    // A worker that panicked has re-raised its panic when the scope ended,
    // so every slot is filled here.
    outputs
        .into_iter()
        .filter_map(|slot| {
            slot.into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        })
        .collect()
}

fn take<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    slot.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_and_bounds_concurrency() {
        let running = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        let out = map(0..50, 4, |i| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(2));
            running.fetch_sub(1, Ordering::SeqCst);
            i * 2
        });
        assert_eq!(out, (0..50).map(|i| i * 2).collect::<Vec<_>>());
        assert!(peak.load(Ordering::SeqCst) <= 4);
        assert!(peak.load(Ordering::SeqCst) >= 2, "ran in parallel");
        assert_eq!(map(Vec::<u8>::new(), 8, |_| 1), Vec::<i32>::new());
        assert_eq!(map([7], 8, |x| x + 1), vec![8]);
    }
}
