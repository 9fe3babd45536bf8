//! parking_lot 0.12's `Condvar` and `WaitTimeoutResult` over the engine's
//! raw condvar, taking lock_api 0.4 guards: each public `wait*` expands
//! `syncprof_engine::wait_on!` on the engine mutex inside the guard's
//! [`RawMutex`], so that it is the leaf of the recorded waits (as
//! `syncprof::parking_lot::Condvar`'s).

use core::fmt;
use core::ops::DerefMut;
use core::panic::Location;
use std::time::{Duration, Instant};

use syncprof_engine::lock_api_raw::{RawCondvar, RawMutex as EngineMutex, deadline};
use syncprof_engine::wait_on;

use crate::{MutexGuard, RawMutex};

/// A type indicating whether a timed wait on a condition variable returned
/// due to a time out or not.
#[derive(Debug, PartialEq, Eq, Copy, Clone)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    /// Returns whether the wait was known to have timed out.
    #[inline]
    pub fn timed_out(self) -> bool {
        self.0
    }
}

/// A condition variable (parking_lot 0.12's `Condvar`): `wait(&mut guard)`,
/// `notify_one() -> bool`, `notify_all() -> usize`, no spurious wake-ups,
/// one mutex at a time (a second one panics).
///
/// Records as `syncprof::parking_lot::Condvar`: every wait is a block-profile
/// event (kind `condvar`, `lock=<site of Condvar::new>`); taking the mutex
/// back is a mutex wait of its own.
///
/// # Examples
///
/// ```
/// use parking_lot::{Condvar, Mutex};
/// use std::sync::Arc;
/// use std::thread;
///
/// let pair = Arc::new((Mutex::new(false), Condvar::new()));
/// let pair2 = Arc::clone(&pair);
/// thread::spawn(move || {
///     let (lock, cvar) = &*pair2;
///     *lock.lock() = true;
///     cvar.notify_one();
/// });
/// let (lock, cvar) = &*pair;
/// let mut started = lock.lock();
/// while !*started {
///     cvar.wait(&mut started);
/// }
/// ```
pub struct Condvar {
    raw: RawCondvar,
}

/// The engine mutex that `guard` holds, for a wait (which gives the lock
/// back before returning, the guard borrowed mutably meanwhile).
#[inline(always)]
fn held<'a, T: ?Sized>(guard: &'a mut MutexGuard<'_, T>) -> &'a EngineMutex {
    let mutex = lock_api::MutexGuard::mutex(guard);
    // SAFETY: the raw lock is only used to wait, which gives the lock back
    // before returning, with the guard borrowed mutably meanwhile.
    let raw: &RawMutex = unsafe { mutex.raw() };
    raw.engine()
}

impl Condvar {
    /// Creates a new condition variable, labelled with the caller's
    /// location.
    #[track_caller]
    #[inline]
    pub const fn new() -> Condvar {
        Condvar {
            raw: RawCondvar::with_site(Location::caller()),
        }
    }

    /// Wakes up one blocked thread on this condvar; returns whether a thread
    /// was woken up.
    #[inline]
    pub fn notify_one(&self) -> bool {
        self.raw.inner.notify_one_counted()
    }

    /// Wakes up all blocked threads on this condvar; returns the number of
    /// threads woken up.
    #[inline]
    pub fn notify_all(&self) -> usize {
        self.raw.inner.notify_all_counted()
    }

    /// Blocks the current thread until this condition variable receives a
    /// notification, releasing the guard's mutex meanwhile.
    ///
    /// # Panics
    ///
    /// If another thread is waiting on the `Condvar` with a different
    /// `Mutex`.
    #[inline]
    pub fn wait<T: ?Sized>(&self, mutex_guard: &mut MutexGuard<'_, T>) {
        // The guard proves this thread holds the mutex.
        wait_on!(&self.raw, held(mutex_guard), None);
    }

    /// As [`wait`](Self::wait), timing out at `timeout`.
    ///
    /// # Panics
    ///
    /// As [`wait`](Self::wait).
    #[inline]
    pub fn wait_until<T: ?Sized>(
        &self,
        mutex_guard: &mut MutexGuard<'_, T>,
        timeout: Instant,
    ) -> WaitTimeoutResult {
        // The guard proves this thread holds the mutex.
        WaitTimeoutResult(wait_on!(&self.raw, held(mutex_guard), Some(timeout)))
    }

    /// As [`wait`](Self::wait), timing out after `timeout` (no time out when
    /// it cannot be represented).
    ///
    /// # Panics
    ///
    /// As [`wait`](Self::wait).
    #[inline]
    pub fn wait_for<T: ?Sized>(
        &self,
        mutex_guard: &mut MutexGuard<'_, T>,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        let deadline = deadline(timeout);
        // The guard proves this thread holds the mutex.
        WaitTimeoutResult(wait_on!(&self.raw, held(mutex_guard), deadline))
    }

    /// Waits until `timeout` (`None`: none) while `condition` holds, as
    /// parking_lot 0.12: the result is that of the last wait.
    #[inline]
    fn wait_while_until_internal<T, F>(
        &self,
        mutex_guard: &mut MutexGuard<'_, T>,
        mut condition: F,
        timeout: Option<Instant>,
    ) -> WaitTimeoutResult
    where
        T: ?Sized,
        F: FnMut(&mut T) -> bool,
    {
        let mut result = WaitTimeoutResult(false);
        while !result.timed_out() && condition(mutex_guard.deref_mut()) {
            // The guard proves this thread holds the mutex.
            result = WaitTimeoutResult(wait_on!(&self.raw, held(mutex_guard), timeout));
        }
        result
    }

    /// Waits while `condition` holds (checked first, then after each
    /// notification).
    ///
    /// # Panics
    ///
    /// As [`wait`](Self::wait).
    #[inline]
    pub fn wait_while<T, F>(&self, mutex_guard: &mut MutexGuard<'_, T>, condition: F)
    where
        T: ?Sized,
        F: FnMut(&mut T) -> bool,
    {
        self.wait_while_until_internal(mutex_guard, condition, None);
    }

    /// Waits while `condition` holds, timing out at `timeout`.
    ///
    /// # Panics
    ///
    /// As [`wait`](Self::wait).
    #[inline]
    pub fn wait_while_until<T, F>(
        &self,
        mutex_guard: &mut MutexGuard<'_, T>,
        condition: F,
        timeout: Instant,
    ) -> WaitTimeoutResult
    where
        T: ?Sized,
        F: FnMut(&mut T) -> bool,
    {
        self.wait_while_until_internal(mutex_guard, condition, Some(timeout))
    }

    /// Waits while `condition` holds, timing out after `timeout`.
    #[inline]
    pub fn wait_while_for<T: ?Sized, F>(
        &self,
        mutex_guard: &mut MutexGuard<'_, T>,
        condition: F,
        timeout: Duration,
    ) -> WaitTimeoutResult
    where
        F: FnMut(&mut T) -> bool,
    {
        self.wait_while_until_internal(mutex_guard, condition, deadline(timeout))
    }
}

impl Default for Condvar {
    /// A condition variable labelled with the caller's location.
    #[track_caller]
    #[inline]
    fn default() -> Condvar {
        Condvar::new()
    }
}

impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad("Condvar { .. }")
    }
}
