//! [`Barrier`]: `std::sync::Barrier`'s API on [`RawBarrier`].

use core::fmt;
use core::panic::Location;

use crate::profile::LockSite;
use crate::raw::barrier::RawBarrier;

/// A barrier: lets `n` threads wait for each other. A drop-in replacement
/// for [`std::sync::Barrier`] that records its waits.
///
/// Every [`wait`](Self::wait) that blocks (all but the last arrival of each
/// round) is one block-profile event, kind `barrier`,
/// `lock=<site of Barrier::new>`. It is built directly on thread parking,
/// so its waits are not recorded as mutex or condvar events.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::thread;
/// use syncprof::Barrier;
///
/// let n = 4;
/// let barrier = Arc::new(Barrier::new(n));
/// let handles: Vec<_> = (0..n)
///     .map(|_| {
///         let barrier = Arc::clone(&barrier);
///         thread::spawn(move || barrier.wait().is_leader())
///     })
///     .collect();
/// let leaders = handles.into_iter().map(|h| h.join().unwrap()).filter(|&l| l).count();
/// assert_eq!(leaders, 1);
/// ```
pub struct Barrier {
    raw: RawBarrier,
    site: LockSite,
}

/// What [`Barrier::wait`] returns: whether this thread was the round's
/// leader.
pub struct BarrierWaitResult(bool);

impl Barrier {
    syncprof_engine::const_fn! {
        /// Creates a barrier for `n` threads, labelled with the caller's
        /// location. With `n` of 0 or 1, `wait` never blocks.
        ///
        /// # Examples
        ///
        /// ```
        /// let barrier = syncprof::Barrier::new(1);
        /// assert!(barrier.wait().is_leader());
        /// ```
        #[track_caller]
        #[must_use]
        pub fn new(n: usize) -> Barrier {
            Barrier { raw: RawBarrier::new(n), site: Location::caller() }
        }
    }

    /// Blocks until `n` threads have called `wait` in this round, then lets
    /// them all go. Exactly one of them, the last to arrive, gets a result
    /// whose [`is_leader`](BarrierWaitResult::is_leader) is `true`. The
    /// barrier is then reused for the next round.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// let barrier = Arc::new(syncprof::Barrier::new(2));
    /// let b = Arc::clone(&barrier);
    /// let other = std::thread::spawn(move || b.wait().is_leader());
    /// let me = barrier.wait().is_leader();
    /// assert!(me ^ other.join().unwrap());
    /// ```
    #[inline]
    pub fn wait(&self) -> BarrierWaitResult {
        let leader = self.raw.wait(self.site);
        crate::profile::keep_frame();
        BarrierWaitResult(leader)
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Barrier").finish_non_exhaustive()
    }
}

impl BarrierWaitResult {
    /// Whether this thread was the last to arrive in its round.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(syncprof::Barrier::new(1).wait().is_leader());
    /// ```
    #[must_use]
    pub fn is_leader(&self) -> bool {
        self.0
    }
}

impl fmt::Debug for BarrierWaitResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BarrierWaitResult")
            .field("is_leader", &self.0)
            .finish()
    }
}
