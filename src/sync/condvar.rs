//! [`Condvar`]: `std::sync::Condvar`'s API on [`RawCondvar`].

use core::fmt;
use core::panic::Location;
use std::time::{Duration, Instant};

use super::mutex::MutexGuard;
use super::poison::{LockResult, PoisonError};
use crate::profile::{LockSite, keep_frame};
use crate::raw::condvar::{RawCondvar, WaitRules};
use syncprof_engine::relock;

/// std's rules: waiters spin first (a spurious wake-up, which `wait`
/// allows), and a second mutex panics with the text of std's check (on the
/// platforms where std checks; its Linux futex condvar does not).
const STD_RULES: WaitRules = WaitRules {
    spin: true,
    two_mutexes: "attempted to use a condition variable with two mutexes",
};

/// Whether a timed wait returned because its time ran out, as
/// [`std::sync::WaitTimeoutResult`] (whose constructor is private, hence this
/// copy).
#[derive(Debug, PartialEq, Eq, Copy, Clone)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    /// Whether the wait is known to have timed out.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use syncprof::{Condvar, Mutex};
    ///
    /// let (lock, cvar) = (Mutex::new(()), Condvar::new());
    /// let (_guard, result) = cvar.wait_timeout(lock.lock().unwrap(), Duration::from_millis(1)).unwrap();
    /// assert!(result.timed_out());
    /// ```
    #[must_use]
    pub fn timed_out(&self) -> bool {
        self.0
    }
}

/// A condition variable: a drop-in replacement for [`std::sync::Condvar`]
/// that records its waits.
///
/// What differs from `std`:
///
/// - **It records.** Every `wait*` call is one block-profile event (kind
///   `condvar`, `lock=<site of Condvar::new>`) for the time until it was
///   notified or timed out; a wait that times out still counts. Taking the
///   mutex back afterwards is a mutex wait of its own (kind `mutex`), with
///   the `wait*` call as its leaf. Releasing the mutex to wait charges the
///   mutex profile like any unlock. `notify_*` records nothing (as in Go).
/// - **It spins before it sleeps.** A waiter first spins for a
///   notification, its mutex released: ~4 µs, or up to ~50 µs on a condvar
///   whose waits mostly end within that (a ping-pong, a busy queue), never
///   past a `wait_timeout`'s deadline, and yielding its core every ~0.5 µs
///   to any thread that can run. A notification that comes meanwhile
///   costs no park and no wake-up. A `notify_one` wakes every waiter
///   spinning at the time (at least one, and never one that began to wait
///   after it); for the others it is a spurious wake-up, which the contract
///   allows (use [`wait_while`](Self::wait_while) or a loop, as with `std`).
///   A parked waiter is woken only by a notification, as `std`'s futex
///   condvar.
/// - **One mutex at a time**: waiting with a second mutex while threads wait
///   with a first one panics (`std` documents that it may).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::thread;
/// use syncprof::{Condvar, Mutex};
///
/// let pair = Arc::new((Mutex::new(false), Condvar::new()));
/// let pair2 = Arc::clone(&pair);
/// thread::spawn(move || {
///     let (lock, cvar) = &*pair2;
///     *lock.lock().unwrap() = true;
///     cvar.notify_one();
/// });
/// let (lock, cvar) = &*pair;
/// let mut started = lock.lock().unwrap();
/// while !*started {
///     started = cvar.wait(started).unwrap();
/// }
/// ```
pub struct Condvar {
    raw: RawCondvar,
    site: LockSite,
}

impl Condvar {
    syncprof_engine::const_fn! {
        /// Creates a condition variable, labelled with the caller's location.
        ///
        /// # Examples
        ///
        /// ```
        /// static READY: syncprof::Condvar = syncprof::Condvar::new();
        /// READY.notify_all();
        /// ```
        #[track_caller]
        #[inline]
        pub fn new() -> Condvar {
            Condvar { raw: RawCondvar::new(), site: Location::caller() }
        }
    }

    /// Releases the guard's mutex, blocks until notified, and takes the
    /// mutex back.
    ///
    /// # Errors
    ///
    /// If the mutex is poisoned when taken back, the guard comes back inside
    /// the [`PoisonError`].
    ///
    /// # Panics
    ///
    /// If other threads are waiting on this condvar with a different mutex.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::thread;
    /// use syncprof::{Condvar, Mutex};
    ///
    /// let pair = Arc::new((Mutex::new(false), Condvar::new()));
    /// let pair2 = Arc::clone(&pair);
    /// thread::spawn(move || {
    ///     let (lock, cvar) = &*pair2;
    ///     *lock.lock().unwrap() = true;
    ///     cvar.notify_one();
    /// });
    /// let (lock, cvar) = &*pair;
    /// let mut started = lock.lock().unwrap();
    /// while !*started {
    ///     started = cvar.wait(started).unwrap();
    /// }
    /// ```
    #[inline]
    pub fn wait<'a, T: ?Sized>(&self, guard: MutexGuard<'a, T>) -> LockResult<MutexGuard<'a, T>> {
        let (raw, site) = MutexGuard::mutex(&guard).raw();
        // SAFETY: the guard proves this thread holds `raw`.
        let outcome = unsafe { self.raw.wait_slow(raw, site, self.site, None, STD_RULES) };
        // Take the mutex back: a wait of its own, with this method as leaf.
        if relock!(outcome, raw, site) {
            keep_frame();
        }
        if raw.poison.get() {
            Err(PoisonError::new(guard))
        } else {
            Ok(guard)
        }
    }

    /// Waits while `condition` returns `true` (checked before each wait,
    /// with the lock held).
    ///
    /// # Errors
    ///
    /// If the mutex is poisoned when taken back, the guard comes back inside
    /// the [`PoisonError`].
    ///
    /// # Panics
    ///
    /// As [`wait`](Self::wait).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::thread;
    /// use syncprof::{Condvar, Mutex};
    ///
    /// let pair = Arc::new((Mutex::new(true), Condvar::new()));
    /// let pair2 = Arc::clone(&pair);
    /// thread::spawn(move || {
    ///     let (lock, cvar) = &*pair2;
    ///     *lock.lock().unwrap() = false;
    ///     cvar.notify_one();
    /// });
    /// let (lock, cvar) = &*pair;
    /// let _guard = cvar.wait_while(lock.lock().unwrap(), |pending| *pending).unwrap();
    /// ```
    pub fn wait_while<'a, T: ?Sized, F>(
        &self,
        mut guard: MutexGuard<'a, T>,
        mut condition: F,
    ) -> LockResult<MutexGuard<'a, T>>
    where
        F: FnMut(&mut T) -> bool,
    {
        while condition(&mut *guard) {
            guard = self.wait(guard)?;
        }
        Ok(guard)
    }

    /// As [`wait`](Self::wait), but gives up after about `dur`. Takes the
    /// mutex back either way. A timed-out wait is still recorded, for the
    /// time it waited.
    ///
    /// # Errors
    ///
    /// If the mutex is poisoned when taken back, the pair comes back inside
    /// the [`PoisonError`].
    ///
    /// # Panics
    ///
    /// As [`wait`](Self::wait).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use syncprof::{Condvar, Mutex};
    ///
    /// let (lock, cvar) = (Mutex::new(()), Condvar::new());
    /// let (_guard, result) = cvar.wait_timeout(lock.lock().unwrap(), Duration::from_millis(10)).unwrap();
    /// assert!(result.timed_out());
    /// ```
    #[inline]
    pub fn wait_timeout<'a, T: ?Sized>(
        &self,
        guard: MutexGuard<'a, T>,
        dur: Duration,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)> {
        let deadline = Instant::now().checked_add(dur);
        let (raw, site) = MutexGuard::mutex(&guard).raw();
        // SAFETY: the guard proves this thread holds `raw`.
        let outcome = unsafe {
            self.raw
                .wait_slow(raw, site, self.site, deadline, STD_RULES)
        };
        if relock!(outcome, raw, site) {
            keep_frame();
        }
        let result = (guard, WaitTimeoutResult(outcome.timed_out));
        if raw.poison.get() {
            Err(PoisonError::new(result))
        } else {
            Ok(result)
        }
    }

    /// As [`wait_timeout`](Self::wait_timeout) with a timeout of `ms`
    /// milliseconds, but the `bool` says whether the wait was **not** timed
    /// out (std's deprecated form, kept so that code calling it compiles
    /// unchanged). Recorded as `wait_timeout` is.
    ///
    /// # Errors
    ///
    /// As [`wait_timeout`](Self::wait_timeout).
    ///
    /// # Panics
    ///
    /// As [`wait`](Self::wait).
    ///
    /// # Examples
    ///
    /// ```
    /// use syncprof::{Condvar, Mutex};
    ///
    /// let (lock, cvar) = (Mutex::new(()), Condvar::new());
    /// #[allow(deprecated)]
    /// let (_guard, notified) = cvar.wait_timeout_ms(lock.lock().unwrap(), 10).unwrap();
    /// assert!(!notified); // nobody notified: the time ran out
    /// ```
    #[deprecated(
        since = "1.6.0",
        note = "replaced by `std::sync::Condvar::wait_timeout`"
    )]
    #[inline]
    pub fn wait_timeout_ms<'a, T: ?Sized>(
        &self,
        guard: MutexGuard<'a, T>,
        ms: u32,
    ) -> LockResult<(MutexGuard<'a, T>, bool)> {
        // The profiles' leaf is `wait_timeout` (which keeps its frame, or,
        // inlined here, its inlined frame), this method its caller.
        let result = self.wait_timeout(guard, Duration::from_millis(u64::from(ms)));
        let notified = |(guard, timeout): (MutexGuard<'a, T>, WaitTimeoutResult)| {
            (guard, !timeout.timed_out())
        };
        match result {
            Ok(pair) => Ok(notified(pair)),
            Err(poisoned) => Err(PoisonError::new(notified(poisoned.into_inner()))),
        }
    }

    /// Waits while `condition` returns `true`, for about `dur` in all.
    ///
    /// The result says whether the time ran out with the condition still
    /// `true`.
    ///
    /// # Errors
    ///
    /// If the mutex is poisoned when taken back, the pair comes back inside
    /// the [`PoisonError`].
    ///
    /// # Panics
    ///
    /// As [`wait`](Self::wait).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use syncprof::{Condvar, Mutex};
    ///
    /// let (lock, cvar) = (Mutex::new(true), Condvar::new());
    /// let (guard, result) = cvar
    ///     .wait_timeout_while(lock.lock().unwrap(), Duration::from_millis(10), |pending| *pending)
    ///     .unwrap();
    /// assert!(result.timed_out() && *guard);
    /// ```
    pub fn wait_timeout_while<'a, T: ?Sized, F>(
        &self,
        mut guard: MutexGuard<'a, T>,
        dur: Duration,
        mut condition: F,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)>
    where
        F: FnMut(&mut T) -> bool,
    {
        let start = Instant::now();
        loop {
            if !condition(&mut *guard) {
                return Ok((guard, WaitTimeoutResult(false)));
            }
            let Some(left) = dur.checked_sub(start.elapsed()) else {
                return Ok((guard, WaitTimeoutResult(true)));
            };
            guard = self.wait_timeout(guard, left)?.0;
        }
    }

    /// Wakes one thread waiting on this condvar, if any. Not recorded.
    ///
    /// # Examples
    ///
    /// ```
    /// let cvar = syncprof::Condvar::new();
    /// cvar.notify_one(); // nobody waits: nothing happens
    /// ```
    #[inline]
    pub fn notify_one(&self) {
        self.raw.notify_one();
    }

    /// Wakes every thread waiting on this condvar. Not recorded.
    ///
    /// # Examples
    ///
    /// ```
    /// let cvar = syncprof::Condvar::new();
    /// cvar.notify_all();
    /// ```
    #[inline]
    pub fn notify_all(&self) {
        self.raw.notify_all();
    }
}

impl Default for Condvar {
    /// A condvar labelled with the caller's location.
    #[track_caller]
    fn default() -> Condvar {
        Condvar::new()
    }
}

impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condvar").finish_non_exhaustive()
    }
}
