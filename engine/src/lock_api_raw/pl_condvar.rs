//! [`Condvar`]: parking_lot 0.13's, on syncprof's condvar; shared by
//! `syncprof::parking_lot` and the compat crate `parking_lot` 0.13 (their
//! `MutexGuard` is the same `lock_api` type over [`RawMutex`]).

use core::fmt;
use core::ops::DerefMut;
use core::panic::Location;
use std::time::{Duration, Instant};

use super::{RawCondvar, RawMutex, deadline};
use crate::wait_on;

/// The guard a [`Condvar`] waits with: parking_lot 0.13's `MutexGuard`.
type MutexGuard<'a, T> = lock_api::MutexGuard<'a, RawMutex, T>;

pub use lock_api::WaitTimeoutResult;

/// A condition variable (`parking_lot::Condvar`): `wait(&mut guard)`,
/// `notify_one() -> bool`, `notify_all() -> usize`, no spurious wake-ups,
/// one mutex at a time (a second one panics).
///
/// Records as `syncprof::Condvar`: every wait is one block-profile event
/// (kind `condvar`, `lock=<site of Condvar::new>`); taking the mutex back is
/// a mutex wait of its own; releasing it charges the mutex profile. A
/// notification that finds the mutex held moves the waiters to the mutex's
/// queue, as parking_lot's does; their mutex wait still starts at the
/// notification.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::thread;
/// use syncprof::parking_lot::{Condvar, Mutex};
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

/// A raw condvar whose timed wait returns `TIMED_OUT` at once without
/// touching the mutex: how a `lock_api::WaitTimeoutResult` (whose field is
/// private) with a given value is made, from the caller's own guard.
struct Fixed<const TIMED_OUT: bool>;

// SAFETY: `wait*` return at once with the mutex still held (never released),
// which is all the trait asks of a wait that may return spuriously.
unsafe impl<const TIMED_OUT: bool> lock_api::RawCondvar for Fixed<TIMED_OUT> {
    const INIT: Self = Fixed;
    type RawMutex = RawMutex;
    unsafe fn wait(&self, _: &RawMutex, _: &mut super::GuardMarker) {}
    fn notify_one(&self) -> bool {
        false
    }
    fn notify_all(&self) -> usize {
        0
    }
}

// SAFETY: as above.
unsafe impl<const TIMED_OUT: bool> lock_api::RawCondvarTimed for Fixed<TIMED_OUT> {
    fn checked_duration_to_instant(_: &Duration) -> Option<Instant> {
        None
    }
    unsafe fn wait_until(&self, _: &RawMutex, _: &mut super::GuardMarker, _: &Instant) -> bool {
        TIMED_OUT
    }
}

/// The raw mutex that `guard` holds, for a wait (which gives the lock back
/// before returning, the guard borrowed mutably meanwhile).
#[inline(always)]
fn held<'a, T: ?Sized>(guard: &'a mut MutexGuard<'_, T>) -> &'a RawMutex {
    let mutex = lock_api::MutexGuard::mutex(guard);
    // SAFETY: the raw lock is only used to wait, which gives the lock back
    // before returning, with the guard borrowed mutably meanwhile.
    unsafe { mutex.raw() }
}

/// `lock_api`'s `WaitTimeoutResult` saying `timed_out`.
#[inline]
fn wait_timeout_result<T: ?Sized>(
    guard: &mut MutexGuard<'_, T>,
    timed_out: bool,
    at: Instant,
) -> WaitTimeoutResult {
    if timed_out {
        lock_api::Condvar::<Fixed<true>>::new().wait_until(guard, at)
    } else {
        lock_api::Condvar::<Fixed<false>>::new().wait_until(guard, at)
    }
}

impl Condvar {
    /// Creates a condition variable, labelled with the caller's location.
    #[track_caller]
    #[inline]
    pub const fn new() -> Condvar {
        Condvar {
            raw: RawCondvar::with_site(Location::caller()),
        }
    }

    /// Wakes one waiter; returns whether there was one.
    #[inline]
    pub fn notify_one(&self) -> bool {
        self.raw.inner.notify_one_counted()
    }

    /// Wakes every waiter; returns how many there were.
    #[inline]
    pub fn notify_all(&self) -> usize {
        self.raw.inner.notify_all_counted()
    }

    /// Releases the guard's mutex, blocks until notified, and takes the
    /// mutex back.
    ///
    /// # Panics
    ///
    /// If other threads wait on this condvar with another mutex.
    #[inline]
    pub fn wait<T: ?Sized>(&self, guard: &mut MutexGuard<'_, T>) {
        // The guard proves this thread holds the mutex.
        wait_on!(&self.raw, held(guard), None);
    }

    /// Waits while `condition` holds (checked first, then after each
    /// wake-up).
    #[inline]
    pub fn wait_while<T: ?Sized, F>(&self, guard: &mut MutexGuard<'_, T>, mut condition: F)
    where
        F: FnMut(&mut T) -> bool,
    {
        while condition(guard.deref_mut()) {
            self.wait(guard);
        }
    }

    /// As [`wait`](Self::wait), giving up at `deadline`.
    #[inline]
    pub fn wait_until<T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        deadline: Instant,
    ) -> WaitTimeoutResult {
        // The guard proves this thread holds the mutex.
        let timed_out = wait_on!(&self.raw, held(guard), Some(deadline));
        wait_timeout_result(guard, timed_out, deadline)
    }

    /// As [`wait`](Self::wait), giving up after `timeout` (no deadline when
    /// `timeout` cannot be represented).
    #[inline]
    pub fn wait_for<T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        let deadline = deadline(timeout);
        // The guard proves this thread holds the mutex.
        let timed_out = wait_on!(&self.raw, held(guard), deadline);
        wait_timeout_result(guard, timed_out, deadline.unwrap_or_else(Instant::now))
    }

    /// Waits while `condition` holds, giving up at `deadline` (the
    /// condition is checked once more then).
    #[inline]
    pub fn wait_while_until<T: ?Sized, F>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        mut condition: F,
        deadline: Instant,
    ) -> WaitTimeoutResult
    where
        F: FnMut(&mut T) -> bool,
    {
        while condition(guard.deref_mut()) {
            let result = self.wait_until(guard, deadline);
            if result.timed_out() {
                // parking_lot's rule: the condition decides, once more.
                let still = condition(guard.deref_mut());
                return wait_timeout_result(guard, still, deadline);
            }
        }
        wait_timeout_result(guard, false, deadline)
    }

    /// Waits while `condition` holds, giving up after `timeout`.
    #[inline]
    pub fn wait_while_for<T: ?Sized, F>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        condition: F,
        timeout: Duration,
    ) -> WaitTimeoutResult
    where
        F: FnMut(&mut T) -> bool,
    {
        match deadline(timeout) {
            Some(deadline) => self.wait_while_until(guard, condition, deadline),
            None => {
                self.wait_while(guard, condition);
                wait_timeout_result(guard, false, Instant::now())
            }
        }
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
