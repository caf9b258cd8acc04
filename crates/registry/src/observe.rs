//! Progress events: what a long fetch is doing, for a caller that shows it.
//!
//! A caller installs an [`Observer`] in
//! [`ClientSettings::observer`](crate::ClientSettings::observer); the client
//! calls it from whichever thread does the work, synchronously, so an
//! observer should only record the event and return. Without an observer
//! no event is even built.
//!
//! Events carry no secrets and no text from registries except inside
//! [`Event::RequestFailed`]'s error, which is redacted like every error the
//! client returns.

use std::time::Duration;

use crate::error::Error;
use crate::reference::Repository;

/// Receives the client's progress [`Event`]s.
pub trait Observer: Send + Sync {
    /// Called once per event, on the thread that made the request.
    fn event(&self, event: &Event<'_>);
}

/// Something the client started, finished or is waiting for.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event<'a> {
    /// [`RegistryClient::announce_listings`](crate::RegistryClient::announce_listings):
    /// this many repositories are about to be listed (the total of a
    /// progress display).
    ListingQueued { repositories: usize },
    /// Listing the tags of a repository started.
    ListingStarted { repository: &'a Repository },
    /// A page of tags arrived: `page` pages and `tags` tags so far.
    PageFetched {
        repository: &'a Repository,
        page: u32,
        tags: usize,
    },
    /// A repository's tag list is complete (`cached`: read from the tag
    /// cache, no request made). `tags` is before the exclusion list.
    ListingDone {
        repository: &'a Repository,
        tags: usize,
        cached: bool,
    },
    /// A request failed and will be sent again after `wait`.
    RetryWaiting {
        /// The host the request went to.
        registry: &'a str,
        /// Why: `429`, `503`, `timeout`, `connection error`...
        reason: &'a str,
        wait: Duration,
        /// The retry about to be made (1 for the first retry).
        retry: u32,
    },
    /// An operation of the client on `repository` failed (after any
    /// retries).
    RequestFailed {
        repository: &'a Repository,
        /// The operation was a tag listing: the listing of `repository` is
        /// over (without a [`Event::ListingDone`]).
        listing: bool,
        /// The error as the caller receives it (secrets redacted).
        error: &'a Error,
    },
}
