//! [`Barrier`]: `tokio::sync::Barrier` whose waits are recorded.

use core::fmt;
use core::future::Future;
use core::panic::Location;

use super::BarrierWaitResult;
use super::wait::recorded;
use crate::profile::{EventKind, LockSite};

/// A barrier for `n` tasks: a drop-in replacement for
/// [`tokio::sync::Barrier`]. A [`wait`](Self::wait) that returns `Pending`
/// is one block-profile event (kind `async_barrier`) on the waiting task's
/// stack.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use syncprof::tokio::Barrier;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let barrier = Arc::new(Barrier::new(2));
/// let other = barrier.clone();
/// let task = tokio::spawn(async move { other.wait().await.is_leader() });
/// let leader = barrier.wait().await.is_leader();
/// assert!(leader != task.await.unwrap());
/// # });
/// ```
pub struct Barrier {
    site: LockSite,
    inner: tokio::sync::Barrier,
}

impl Barrier {
    /// A barrier for `n` tasks (`0` is treated as `1`, as tokio does),
    /// labelled with the caller's location.
    #[track_caller]
    pub fn new(n: usize) -> Barrier {
        Barrier {
            site: Location::caller(),
            inner: tokio::sync::Barrier::new(n),
        }
    }

    /// Waits until `n` tasks have called `wait`; one of them is the leader.
    pub fn wait(&self) -> impl Future<Output = BarrierWaitResult> {
        recorded!(
            Wait,
            self.inner.wait(),
            EventKind::AsyncBarrier,
            self.site,
            None,
            |result| result,
        )
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}
