//! The raw condition variable of the parking_lot face, and the `wait_on!`
//! macro that waits on it.

use core::panic::Location;
use std::time::{Duration, Instant};

use super::GuardMarker;

use super::{LOCK_API_SITE, RawMutex, deadline};
use crate::profile::LockSite;
use crate::raw::condvar::{RawCondvar as Condvar, WaitRules};

/// A raw condition variable over syncprof's (parking_lot's algorithm, its
/// waits recorded), with its creation site; for `lock_api::Condvar`.
pub struct RawCondvar {
    #[doc(hidden)]
    pub inner: Condvar,
    #[doc(hidden)]
    pub site: LockSite,
}

/// parking_lot's rules: no spin (no spurious wake-ups, exact counts), and
/// its text for a second mutex.
#[doc(hidden)]
pub const PARKING_LOT_RULES: WaitRules = WaitRules {
    spin: false,
    two_mutexes: "attempted to use a condition variable with more than one mutex",
};

/// `wait_on!(condvar, mutex, deadline)`: waits on the [`RawCondvar`]
/// `condvar` with the [`RawMutex`] `mutex` (which the calling thread holds)
/// until notified or `deadline` (an `Option<Instant>`), re-takes the mutex,
/// and evaluates to whether the wait timed out. Expanded in an `unsafe`
/// context whose caller holds `mutex`.
///
/// A macro so that both slow-path calls sit in the public method's own
/// body, which is then the leaf of both recorded waits (see
/// [`relock!`](crate::raw::condvar::relock)).
#[doc(hidden)]
#[macro_export]
macro_rules! wait_on {
    ($condvar:expr, $mutex:expr, $deadline:expr) => {{
        let condvar: &$crate::lock_api_raw::RawCondvar = $condvar;
        let mutex: &$crate::lock_api_raw::RawMutex = $mutex;
        // SAFETY: the caller holds `mutex` (this macro's contract).
        let outcome = unsafe {
            condvar.inner.wait_slow(
                &mutex.inner,
                mutex.site,
                condvar.site,
                $deadline,
                $crate::lock_api_raw::PARKING_LOT_RULES,
            )
        };
        // Take the mutex back: a wait of its own, with the caller as leaf.
        if $crate::relock!(outcome, &mutex.inner, mutex.site) {
            $crate::profile::keep_frame();
        }
        outcome.timed_out
    }};
}

impl RawCondvar {
    /// A raw condvar labelled `site`.
    #[inline]
    pub const fn with_site(site: &'static Location<'static>) -> RawCondvar {
        RawCondvar {
            inner: Condvar::new(),
            site,
        }
    }
}

// SAFETY: `wait_slow` queues the thread before it releases the mutex (in
// `before_sleep`), so no notification after the release is missed; the
// mutex is re-taken before returning; a panic for a second mutex happens
// with the mutex still held. No spurious wake-ups: a wait ends by a
// notification or its deadline (it does not spin, so a `notify_one` wakes
// exactly one waiter).
unsafe impl lock_api::RawCondvar for RawCondvar {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawCondvar = RawCondvar::with_site(LOCK_API_SITE);

    type RawMutex = RawMutex;

    #[inline]
    unsafe fn wait(&self, mutex: &RawMutex, _guard: &mut GuardMarker) {
        // The caller holds `mutex`.
        crate::wait_on!(self, mutex, None);
    }

    #[inline]
    fn notify_one(&self) -> bool {
        self.inner.notify_one_counted()
    }

    #[inline]
    fn notify_all(&self) -> usize {
        self.inner.notify_all_counted()
    }
}

// SAFETY: as `RawCondvar`.
unsafe impl lock_api::RawCondvarTimed for RawCondvar {
    fn checked_duration_to_instant(timeout: &Duration) -> Option<Instant> {
        deadline(*timeout)
    }

    #[inline]
    unsafe fn wait_until(
        &self,
        mutex: &RawMutex,
        _guard: &mut GuardMarker,
        timeout: &Instant,
    ) -> bool {
        // The caller holds `mutex`.
        crate::wait_on!(self, mutex, Some(*timeout))
    }
}
