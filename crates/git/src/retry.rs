//! A push that survives races with other writers of the same branch.
//!
//! Between the clone and the push, someone else (a person, another automation) may push to the
//! branch. The server then refuses the push as non-fast-forward. Like Flux, the Job does not
//! merge: it fetches the new tip, resets to it, re-runs its update on the new tree, commits
//! again and pushes again, a bounded number of times with exponential backoff and jitter. Only
//! races are retried; a server refusal (hook, protected branch), bad credentials or a network
//! failure end the loop at once.

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use git2::Oid;
use rand::Rng as _;

use crate::checkout::{Checkout, CommitSettings, PushRequest};
use crate::error::Error;

/// How often and how patiently to retry.
#[derive(Clone)]
pub struct RetryPolicy {
    /// Push attempts in all (the first included); at least 1. Default 4.
    pub attempts: u32,
    /// Wait before the second attempt; doubled for each further one. Default 500 ms.
    pub initial_backoff: Duration,
    /// Upper bound of one wait. Default 8 s.
    pub max_backoff: Duration,
    /// Waits are drawn uniformly from [half, all] of the backoff. Default on.
    pub jitter: bool,
    /// How to wait (tests inject a recorder). Default `std::thread::sleep`.
    pub sleep: Arc<dyn Fn(Duration) + Send + Sync>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            jitter: true,
            sleep: Arc::new(std::thread::sleep),
        }
    }
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("attempts", &self.attempts)
            .field("initial_backoff", &self.initial_backoff)
            .field("max_backoff", &self.max_backoff)
            .field("jitter", &self.jitter)
            .finish_non_exhaustive()
    }
}

impl RetryPolicy {
    /// The wait after failed attempt `attempt` (1-based), before jitter.
    #[must_use]
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }

    fn wait(&self, attempt: u32) {
        let full = self.backoff(attempt);
        let wait = if self.jitter && !full.is_zero() {
            rand::thread_rng().gen_range(full / 2..=full)
        } else {
            full
        };
        (self.sleep)(wait);
    }
}

/// How [`push_with_retry`] ended well.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushOutcome {
    /// The commit is on the remote branch.
    Pushed {
        /// The pushed commit.
        commit: Oid,
        /// Push attempts made (1 = no race).
        attempts: u32,
    },
    /// HEAD is the checked-out commit: nothing was committed, nothing was pushed.
    NothingToCommit,
    /// After a race, re-applying the update to the new tip changed nothing: someone else
    /// already made the change. Nothing was pushed.
    NothingToDo {
        /// The remote tip the work tree now holds.
        tip: Oid,
        /// Push attempts made.
        attempts: u32,
    },
}

/// Why [`push_with_retry`] failed: a git error (including [`Error::GaveUp`]) or the caller's
/// re-apply error.
#[derive(Debug, thiserror::Error)]
pub enum RetryError<E: std::error::Error + 'static> {
    /// Cloning, committing, fetching or pushing failed, or the attempts ran out.
    #[error(transparent)]
    Git(#[from] Error),
    /// The caller's re-apply closure failed.
    #[error("re-applying the update after a rejected push failed")]
    Reapply(#[source] E),
}

/// Pushes HEAD's branch; when the push loses a race, fetches the new tip (same depth), resets
/// to it, calls `reapply(work_dir)` and commits what it changed with the message it returns
/// (`None` = nothing to change), then pushes again, up to `policy.attempts` pushes.
///
/// Call it after [`Checkout::commit`]; when HEAD is still the checked-out commit it returns
/// [`PushOutcome::NothingToCommit`] without contacting the remote.
pub fn push_with_retry<E, F>(
    checkout: &mut Checkout,
    request: &PushRequest,
    commit: &CommitSettings<'_>,
    policy: &RetryPolicy,
    mut reapply: F,
) -> Result<PushOutcome, RetryError<E>>
where
    E: std::error::Error + 'static,
    F: FnMut(&Path) -> Result<Option<String>, E>,
{
    if checkout.head()? == checkout.checked_out_commit() {
        return Ok(PushOutcome::NothingToCommit);
    }
    let attempts = policy.attempts.max(1);
    let mut attempt = 1;
    loop {
        let rejection = match checkout.push(request) {
            Ok(pushed) => {
                return Ok(PushOutcome::Pushed {
                    commit: pushed.commit,
                    attempts: attempt,
                });
            }
            Err(err) if err.is_retryable() => err,
            Err(err) => return Err(err.into()),
        };
        if attempt >= attempts {
            return Err(Error::GaveUp {
                attempts: attempt,
                last: Box::new(rejection),
            }
            .into());
        }
        tracing::info!(attempt, error = %rejection, "push lost a race; fetching the new tip and re-applying");
        policy.wait(attempt);
        attempt += 1;
        let tip = checkout.fetch_and_reset()?;
        let Some(message) = reapply(checkout.work_dir()).map_err(RetryError::Reapply)? else {
            return Ok(PushOutcome::NothingToDo {
                tip,
                attempts: attempt - 1,
            });
        };
        if checkout.commit(commit, &message)?.is_none() {
            return Ok(PushOutcome::NothingToDo {
                tip,
                attempts: attempt - 1,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::RetryPolicy;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let policy = RetryPolicy {
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(5),
            ..RetryPolicy::default()
        };
        let waits: Vec<_> = (1..=5)
            .map(|attempt| policy.backoff(attempt).as_secs())
            .collect();
        assert_eq!(waits, [1, 2, 4, 5, 5]);
        assert_eq!(policy.backoff(200), Duration::from_secs(5));
    }
}
