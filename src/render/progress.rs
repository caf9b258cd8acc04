//! Progress of registry fetching, on stderr, for runs that list many
//! repositories.
//!
//! [`ProgressRenderer`] is an [`Observer`] of the registry client: install
//! it in `ClientSettings::observer` and it turns the client's events into
//! one status line such as
//!
//! ```text
//! fetching: 3/8 repositories, 1,204 tags listed, 1 retry waiting (ghcr.io, 429, 2s)
//! ```
//!
//! Nothing is shown during the first second ([`QUIET_START`]), so a quick
//! run prints nothing. On a terminal ([`Style::Live`]) the line is
//! rewritten in place at most every [`LIVE_REFRESH`] and cleared by
//! [`ProgressRenderer::finish`]; elsewhere ([`Style::Lines`], CI logs) a
//! plain line is printed at most every [`LINE_INTERVAL`], and `finish`
//! prints a last one if any was printed.
//!
//! The renderer only writes to the `Write` it is given and reads time from
//! a [`Clock`], so it is tested with a fake clock and a `Vec<u8>`. It draws
//! when an event arrives; a caller that wants the line to move while the
//! client is silent (a long retry wait) calls [`ProgressRenderer::tick`]
//! from a timer thread. Write errors are ignored: progress is best effort.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use image_update_registry::{Event, Observer};

use crate::escape::Shown;

/// Nothing is shown before fetching has gone on this long.
pub(crate) const QUIET_START: Duration = Duration::from_secs(1);
/// Shortest time between two redraws of the live line.
pub(crate) const LIVE_REFRESH: Duration = Duration::from_millis(100);
/// Shortest time between two plain progress lines.
pub(crate) const LINE_INTERVAL: Duration = Duration::from_secs(5);
/// Width the live line is cut to unless told otherwise.
pub(crate) const DEFAULT_WIDTH: usize = 80;

/// Erase the current terminal line and return to its start.
const CLEAR_LINE: &str = "\r\x1b[2K";

/// Where "now" comes from: time since an arbitrary fixed start.
pub(crate) trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> Duration;
}

/// The real clock: time since it was made.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MonotonicClock(Instant);

impl MonotonicClock {
    /// A clock starting now.
    #[must_use]
    pub(crate) fn new() -> Self {
        Self(Instant::now())
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> Duration {
        (**self).now()
    }
}

/// How progress is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// A terminal: one line rewritten in place, cleared at the end.
    Live,
    /// Anything else: plain lines, at most one every [`LINE_INTERVAL`].
    Lines,
}

impl Style {
    /// [`Style::Live`] for a terminal, else [`Style::Lines`].
    #[must_use]
    pub(crate) fn for_terminal(is_terminal: bool) -> Self {
        if is_terminal { Self::Live } else { Self::Lines }
    }
}

/// Shows the registry client's progress; see the module documentation.
pub(crate) struct ProgressRenderer<W, C = MonotonicClock> {
    clock: C,
    style: Style,
    width: usize,
    state: Mutex<State<W>>,
}

/// A retry the client is waiting out.
struct Retry {
    registry: String,
    reason: String,
    until: Duration,
}

struct State<W> {
    out: W,
    /// When the first event arrived.
    first_event: Option<Duration>,
    /// Repositories announced by `announce_listings`.
    queued: usize,
    started: usize,
    done: usize,
    failed: usize,
    /// Tags of finished listings.
    done_tags: usize,
    /// Tags so far of listings in progress, by repository.
    listing: HashMap<String, usize>,
    retries: Vec<Retry>,
    last_draw: Option<Duration>,
    /// The live line is on the screen.
    live_line: bool,
    /// Something was written.
    printed: bool,
}

impl<W: Write + Send, C: Clock> ProgressRenderer<W, C> {
    /// A renderer writing to `out` in `style`, reading time from `clock`.
    pub(crate) fn new(out: W, clock: C, style: Style) -> Self {
        Self {
            clock,
            style,
            width: DEFAULT_WIDTH,
            state: Mutex::new(State {
                out,
                first_event: None,
                queued: 0,
                started: 0,
                done: 0,
                failed: 0,
                done_tags: 0,
                listing: HashMap::new(),
                retries: Vec::new(),
                last_draw: None,
                live_line: false,
                printed: false,
            }),
        }
    }

    #[cfg(test)]
    /// Cut the live line to `width` columns (the terminal's width), so that
    /// it never wraps and can be rewritten in place.
    #[must_use]
    pub(crate) fn with_width(mut self, width: usize) -> Self {
        self.width = width.max(10);
        self
    }

    fn lock(&self) -> MutexGuard<'_, State<W>> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Redraw if it is time to: for a caller's timer, so that the line
    /// moves (retry waits count down) while no event arrives.
    pub(crate) fn tick(&self) {
        let now = self.clock.now();
        self.lock().draw_if_due(now, self.style, self.width);
    }

    /// The end of fetching: clear the live line, or print a last plain
    /// line if any was printed. Further events start over quietly.
    pub(crate) fn finish(&self) {
        let now = self.clock.now();
        let mut state = self.lock();
        match self.style {
            Style::Live if state.live_line => {
                let _ = write!(state.out, "{CLEAR_LINE}");
                let _ = state.out.flush();
                state.live_line = false;
            }
            Style::Lines if state.printed => {
                let line = state.line(now, "fetched");
                let _ = writeln!(state.out, "{line}");
                let _ = state.out.flush();
            }
            _ => {}
        }
        state.printed = false;
        state.first_event = None;
        state.last_draw = None;
    }

    /// Run `work` while a timer thread calls [`tick`](Self::tick) every
    /// 200 ms, then [`finish`](Self::finish).
    pub(crate) fn during<R>(&self, work: impl FnOnce() -> R) -> R
    where
        W: Send,
        C: Sync,
    {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let result = std::thread::scope(|scope| {
            scope.spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(Duration::from_millis(200))
                {
                    self.tick();
                }
            });
            let result = work();
            drop(stop);
            result
        });
        self.finish();
        result
    }

    /// The writer, for tests.
    #[cfg(test)]
    pub(crate) fn into_inner(self) -> W {
        self.state
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .out
    }
}

impl<W: Write + Send, C: Clock> Observer for ProgressRenderer<W, C> {
    fn event(&self, event: &Event<'_>) {
        let now = self.clock.now();
        let mut state = self.lock();
        state.first_event.get_or_insert(now);
        match event {
            Event::ListingQueued { repositories } => state.queued += repositories,
            Event::ListingStarted { repository } => {
                state.started += 1;
                state.listing.insert(repository.to_string(), 0);
            }
            Event::PageFetched {
                repository, tags, ..
            } => {
                state.listing.insert(repository.to_string(), *tags);
            }
            Event::ListingDone {
                repository, tags, ..
            } => {
                state.listing.remove(&repository.to_string());
                state.done += 1;
                state.done_tags += tags;
            }
            Event::RetryWaiting {
                registry,
                reason,
                wait,
                ..
            } => state.retries.push(Retry {
                registry: (*registry).to_owned(),
                reason: (*reason).to_owned(),
                until: now + *wait,
            }),
            // A failed listing is over; other failed requests are not counted.
            Event::RequestFailed {
                repository,
                listing: true,
                ..
            } if state.listing.remove(&repository.to_string()).is_some() => {
                state.done += 1;
                state.failed += 1;
            }
            _ => {}
        }
        state.draw_if_due(now, self.style, self.width);
    }
}

impl<W: Write> State<W> {
    fn draw_if_due(&mut self, now: Duration, style: Style, width: usize) {
        let Some(first) = self.first_event else {
            return;
        };
        if now.saturating_sub(first) < QUIET_START {
            return;
        }
        let interval = match style {
            Style::Live => LIVE_REFRESH,
            Style::Lines => LINE_INTERVAL,
        };
        if self
            .last_draw
            .is_some_and(|last| now.saturating_sub(last) < interval)
        {
            return;
        }
        let line = self.line(now, "fetching");
        match style {
            Style::Live => {
                let line = cut(&line, width.saturating_sub(1));
                let _ = write!(self.out, "{CLEAR_LINE}{line}");
                self.live_line = true;
            }
            Style::Lines => {
                let _ = writeln!(self.out, "{line}");
            }
        }
        let _ = self.out.flush();
        self.printed = true;
        self.last_draw = Some(now);
    }

    /// `fetching: 3/8 repositories, 1,204 tags listed, 1 failed, 1 retry
    /// waiting (ghcr.io, 429, 2s)`.
    fn line(&mut self, now: Duration, verb: &str) -> String {
        self.retries.retain(|r| r.until > now);
        let total = self.queued.max(self.started);
        let tags = self.done_tags + self.listing.values().sum::<usize>();
        let mut line = format!(
            "{verb}: {}/{} repositor{}, {} tag{} listed",
            self.done,
            total,
            if total == 1 { "y" } else { "ies" },
            thousands(tags),
            if tags == 1 { "" } else { "s" },
        );
        if self.failed > 0 {
            line.push_str(&format!(", {} failed", self.failed));
        }
        if let Some(latest) = self.retries.last() {
            let n = self.retries.len();
            let left = latest.until.saturating_sub(now);
            line.push_str(&format!(
                ", {n} retr{} waiting ({}, {}, {}s)",
                if n == 1 { "y" } else { "ies" },
                Shown(&latest.registry),
                Shown(&latest.reason),
                left.as_secs() + u64::from(left.subsec_nanos() > 0),
            ));
        }
        line
    }
}

/// `1204` → `1,204`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `line` cut to `width` characters, ending with `…` when cut.
fn cut(line: &str, width: usize) -> String {
    if line.chars().count() <= width {
        return line.to_owned();
    }
    let mut out: String = line.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use image_update_registry::{Error, Repository};

    #[derive(Default)]
    struct FakeClock(Mutex<Duration>);

    impl FakeClock {
        fn set(&self, millis: u64) {
            *self.0.lock().unwrap() = Duration::from_millis(millis);
        }
    }

    impl Clock for FakeClock {
        fn now(&self) -> Duration {
            *self.0.lock().unwrap()
        }
    }

    fn renderer(style: Style) -> (ProgressRenderer<Vec<u8>, Arc<FakeClock>>, Arc<FakeClock>) {
        let clock = Arc::new(FakeClock::default());
        (
            ProgressRenderer::new(Vec::new(), Arc::clone(&clock), style),
            clock,
        )
    }

    fn repo(s: &str) -> Repository {
        Repository::parse(s).unwrap()
    }

    fn text(r: ProgressRenderer<Vec<u8>, Arc<FakeClock>>) -> String {
        String::from_utf8(r.into_inner()).unwrap()
    }

    #[test]
    fn quiet_during_the_first_second() {
        let (r, clock) = renderer(Style::Live);
        let a = repo("ghcr.io/a/b");
        r.event(&Event::ListingQueued { repositories: 2 });
        clock.set(500);
        r.event(&Event::ListingStarted { repository: &a });
        clock.set(999);
        r.event(&Event::ListingDone {
            repository: &a,
            tags: 10,
            cached: false,
        });
        r.tick();
        r.finish();
        assert_eq!(text(r), "");
    }

    #[test]
    fn live_line_is_rewritten_in_place_then_cleared() {
        let (r, clock) = renderer(Style::Live);
        let r = r.with_width(120);
        let repos: Vec<Repository> = (0..8).map(|i| repo(&format!("ghcr.io/o/r{i}"))).collect();
        r.event(&Event::ListingQueued { repositories: 8 });
        for (i, a) in repos.iter().take(3).enumerate() {
            r.event(&Event::ListingStarted { repository: a });
            r.event(&Event::ListingDone {
                repository: a,
                tags: 400 + i,
                cached: false,
            });
        }
        r.event(&Event::ListingStarted {
            repository: &repos[3],
        });
        clock.set(1000);
        r.event(&Event::PageFetched {
            repository: &repos[3],
            page: 1,
            tags: 1,
        });
        // Too soon for a redraw.
        clock.set(1050);
        r.event(&Event::RetryWaiting {
            registry: "ghcr.io",
            reason: "429",
            wait: Duration::from_millis(2000),
            retry: 1,
        });
        clock.set(1100);
        r.tick();
        // The wait is over: the retry is no longer shown.
        clock.set(3100);
        r.tick();
        r.finish();
        assert_eq!(
            text(r),
            "\r\x1b[2Kfetching: 3/8 repositories, 1,204 tags listed\
             \r\x1b[2Kfetching: 3/8 repositories, 1,204 tags listed, 1 retry waiting (ghcr.io, 429, 2s)\
             \r\x1b[2Kfetching: 3/8 repositories, 1,204 tags listed\
             \r\x1b[2K"
        );
    }

    #[test]
    fn plain_lines_at_most_every_few_seconds() {
        let (r, clock) = renderer(Style::Lines);
        let a = repo("quay.io/a/b");
        let b = repo("quay.io/a/c");
        r.event(&Event::ListingStarted { repository: &a });
        for ms in (1000..6000).step_by(250) {
            clock.set(ms);
            r.event(&Event::PageFetched {
                repository: &a,
                page: 1,
                tags: 1500,
            });
        }
        clock.set(6000);
        r.event(&Event::ListingDone {
            repository: &a,
            tags: 1500,
            cached: false,
        });
        r.event(&Event::ListingStarted { repository: &b });
        clock.set(6500);
        r.event(&Event::RequestFailed {
            repository: &b,
            listing: true,
            error: &Error::InvalidSetting("x".to_owned()),
        });
        r.finish();
        assert_eq!(
            text(r),
            "fetching: 0/1 repository, 1,500 tags listed\n\
             fetching: 1/1 repository, 1,500 tags listed\n\
             fetched: 2/2 repositories, 1,500 tags listed, 1 failed\n"
        );
    }

    #[test]
    fn failed_requests_outside_listings_do_not_count() {
        let (r, clock) = renderer(Style::Lines);
        let a = repo("ghcr.io/a/b");
        r.event(&Event::ListingStarted { repository: &a });
        r.event(&Event::ListingDone {
            repository: &a,
            tags: 3,
            cached: true,
        });
        clock.set(1500);
        r.event(&Event::RequestFailed {
            repository: &a,
            listing: false,
            error: &Error::InvalidSetting("x".to_owned()),
        });
        assert_eq!(text(r), "fetching: 1/1 repository, 3 tags listed\n");
    }

    #[test]
    fn live_line_is_cut_to_the_width() {
        let (r, clock) = renderer(Style::Live);
        let r = r.with_width(30);
        r.event(&Event::ListingQueued { repositories: 1 });
        clock.set(1000);
        r.tick();
        assert_eq!(text(r), "\r\x1b[2Kfetching: 0/1 repository, 0 …");
    }

    #[test]
    fn numbers_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1204), "1,204");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(Style::for_terminal(true), Style::Live);
        assert_eq!(Style::for_terminal(false), Style::Lines);
    }
}
