//! Waiting for AWS to say a change is applied (Route 53's `INSYNC`, Global Accelerator's
//! `DEPLOYED`): a bounded poll, written once.

use std::future::Future;
use std::time::Duration;

use backon::{ConstantBuilder, Retryable};

use crate::error::AwsError;

/// How often, and how many times, a wait looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollWait {
    pub poll_every: Duration,
    pub polls: usize,
}

impl PollWait {
    /// Route 53 documents a change `INSYNC` "generally within 60 seconds"; the wait ends before
    /// a typical Lambda timeout.
    pub const ROUTE53_IN_SYNC: PollWait = PollWait {
        poll_every: Duration::from_secs(5),
        polls: 24,
    };
    /// Global Accelerator documents no bound; changes usually deploy within a minute. How
    /// long to wait is the caller's (`lasting`): a step's is the plan's unjudged bound.
    pub const ACCELERATOR_POLL_EVERY: Duration = Duration::from_secs(3);

    /// Polls `poll_every` apart for about `within` (at least one look after the first).
    pub fn lasting(poll_every: Duration, within: Duration) -> PollWait {
        let every = poll_every.as_millis().max(1);
        let polls = within.as_millis().div_ceil(every).max(1);
        PollWait {
            poll_every,
            polls: usize::try_from(polls).unwrap_or(usize::MAX),
        }
    }
}

enum Poll {
    Pending,
    Failed(AwsError),
}

/// Looks until `look` says done (`Ok(true)`), at most `wait.polls` more times after the first:
/// true once done, false if it never was, the error of a look that failed.
pub(crate) async fn until_done<F, Fut>(wait: PollWait, mut look: F) -> Result<bool, AwsError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool, AwsError>>,
{
    let poll = || {
        let looked = look();
        async move {
            match looked.await {
                Ok(true) => Ok(()),
                Ok(false) => Err(Poll::Pending),
                Err(e) => Err(Poll::Failed(e)),
            }
        }
    };
    let schedule = ConstantBuilder::default()
        .with_delay(wait.poll_every)
        .with_max_times(wait.polls);
    match poll
        .retry(schedule)
        .when(|p| matches!(p, Poll::Pending))
        .await
    {
        Ok(()) => Ok(true),
        Err(Poll::Pending) => Ok(false),
        Err(Poll::Failed(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::error::AwsErrorKind;

    const QUICK: PollWait = PollWait {
        poll_every: Duration::ZERO,
        polls: 3,
    };

    #[test]
    fn a_wait_lasting_a_bound_looks_often_enough_to_cover_it() {
        let every = Duration::from_secs(3);
        let polls = |seconds| PollWait::lasting(every, Duration::from_secs(seconds)).polls;
        assert_eq!((polls(30), polls(31), polls(180)), (10, 11, 60));
        assert_eq!(polls(0), 1, "at least one look after the first");
        assert_eq!(PollWait::lasting(Duration::ZERO, Duration::ZERO).polls, 1);
    }

    #[tokio::test]
    async fn it_looks_until_done_and_at_most_once_more_per_poll() {
        let looks = Cell::new(0);
        let done_at_third = until_done(QUICK, || {
            looks.set(looks.get() + 1);
            let n = looks.get();
            async move { Ok(n == 3) }
        })
        .await;
        assert_eq!((done_at_third, looks.get()), (Ok(true), 3));

        looks.set(0);
        let never = until_done(QUICK, || {
            looks.set(looks.get() + 1);
            async { Ok(false) }
        })
        .await;
        assert_eq!(
            (never, looks.get()),
            (Ok(false), 4),
            "the first look and 3 more"
        );
    }

    #[tokio::test]
    async fn a_look_that_fails_ends_the_wait_with_its_error() {
        let failed = AwsError::new(AwsErrorKind::AccessDenied, "GetChange", "denied");
        let looks = Cell::new(0);
        let answer = until_done(QUICK, || {
            looks.set(looks.get() + 1);
            let failed = failed.clone();
            async move { Err(failed) }
        })
        .await;
        assert_eq!((answer, looks.get()), (Err(failed), 1));
    }
}
