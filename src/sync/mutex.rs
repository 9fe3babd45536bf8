//! [`Mutex`]: `std::sync::Mutex`'s API on [`RawMutex`].

use core::cell::UnsafeCell;
use core::fmt;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};
use core::panic::{Location, RefUnwindSafe, UnwindSafe};

use super::poison::{self, LockResult, TryLockError, TryLockResult};
use crate::profile::LockSite;
use crate::raw::mutex::RawMutex;

/// A mutual exclusion primitive useful for protecting shared data: a drop-in
/// replacement for [`std::sync::Mutex`] that records contention.
///
/// The API, the poisoning and the `Send`/`Sync` bounds are `std`'s. What
/// differs:
///
/// - **It records.** A [`lock`](Self::lock) that has to wait is one event in
///   the block profile ([`crate::profile::block`]), on the waiter's stack,
///   with its whole wait. An unlock that wakes a waiter is one event in the
///   mutex profile ([`crate::profile::mutex`]), on the unlocker's stack,
///   charged with the delay its critical section caused to every waiter (Go
///   ≥ 1.22's rule; `docs/profiles.md` in the repository has the exact
///   semantics). Both carry the labels `kind=mutex` and
///   `lock=<file:line of Mutex::new>`. Nothing is recorded unless
///   [`set_block_rate`](crate::set_block_rate) or
///   [`set_mutex_fraction`](crate::set_mutex_fraction) turned it on.
/// - **It is parking_lot's algorithm underneath**, on `parking_lot_core`:
///   uncontended lock and unlock are one atomic instruction each; waiters
///   park in a global queue; a waiter that has waited ~0.5 ms gets the lock
///   handed over, so no thread starves. 16 bytes for a `Mutex<()>` (the creation site is 8 of them).
/// - [`new`](Self::new) is `#[track_caller]`: the location of the call is the
///   lock's label. Create locks where their name makes sense (a `static`, a
///   constructor); a lock created inside a generic helper is labelled with
///   the helper's line.
///
/// # Poisoning
///
/// As in `std`: if a thread panics while holding the guard, the mutex is
/// poisoned, and every later [`lock`](Self::lock) or
/// [`try_lock`](Self::try_lock) returns an [`Err`] that still carries the
/// guard ([`PoisonError::into_inner`](std::sync::PoisonError::into_inner)).
/// [`clear_poison`](Self::clear_poison) resets it.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::thread;
/// use syncprof::Mutex;
///
/// let counter = Arc::new(Mutex::new(0));
/// let handles: Vec<_> = (0..4)
///     .map(|_| {
///         let counter = Arc::clone(&counter);
///         thread::spawn(move || *counter.lock().unwrap() += 1)
///     })
///     .collect();
/// for handle in handles {
///     handle.join().unwrap();
/// }
/// assert_eq!(*counter.lock().unwrap(), 4);
/// ```
pub struct Mutex<T: ?Sized> {
    raw: RawMutex,
    site: LockSite,
    data: UnsafeCell<T>,
}

// SAFETY: a `Mutex<T>` hands out `&mut T` to one thread at a time, so sharing
// it between threads only moves `T` between them: `T: Send` suffices (as
// `std`'s).
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}

impl<T: ?Sized> UnwindSafe for Mutex<T> {}
impl<T: ?Sized> RefUnwindSafe for Mutex<T> {}

/// An RAII guard: the lock is held until it is dropped. The data is reached
/// through [`Deref`] and [`DerefMut`].
///
/// Returned by [`Mutex::lock`] and [`Mutex::try_lock`]. As `std`'s, it is
/// not `Send` (the lock must be released by the thread that took it).
/// Dropping it after a contended wait records the mutex-profile charge on
/// the dropping frame's stack (see [`Mutex`]).
#[must_use = "if unused the Mutex will immediately unlock"]
#[clippy::has_significant_drop]
pub struct MutexGuard<'a, T: ?Sized + 'a> {
    lock: &'a Mutex<T>,
    poison: poison::Guard,
    _not_send: PhantomData<*const ()>,
}

// SAFETY: a shared `&MutexGuard<T>` only gives `&T`, so it may be shared when
// `T: Sync` (as `std`'s).
unsafe impl<T: ?Sized + Sync> Sync for MutexGuard<'_, T> {}

impl<T> Mutex<T> {
    syncprof_engine::const_fn! {
        /// Creates an unlocked mutex holding `value`, labelled with the
        /// caller's location.
        ///
        /// # Examples
        ///
        /// ```
        /// use syncprof::Mutex;
        ///
        /// static COUNT: Mutex<u64> = Mutex::new(0);
        /// *COUNT.lock().unwrap() += 1;
        /// ```
        #[track_caller]
        #[inline]
        pub fn new(value: T) -> Mutex<T> {
            Mutex { raw: RawMutex::new(), site: Location::caller(), data: UnsafeCell::new(value) }
        }
    }

    /// Consumes the mutex and returns its data.
    ///
    /// # Errors
    ///
    /// If the mutex is poisoned, the data comes back inside the
    /// [`PoisonError`](std::sync::PoisonError).
    ///
    /// # Examples
    ///
    /// ```
    /// let mutex = syncprof::Mutex::new(0);
    /// assert_eq!(mutex.into_inner().unwrap(), 0);
    /// ```
    pub fn into_inner(self) -> LockResult<T>
    where
        T: Sized,
    {
        let poisoned = self.raw.poison.get();
        let data = self.data.into_inner();
        if poisoned {
            Err(std::sync::PoisonError::new(data))
        } else {
            Ok(data)
        }
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Takes the lock, blocking the thread until it is free.
    ///
    /// A call that has to wait is recorded in the block profile (kind
    /// `mutex`), with this call as the stack's leaf.
    ///
    /// # Errors
    ///
    /// If the mutex is poisoned, the guard comes back inside the
    /// [`PoisonError`](std::sync::PoisonError); the lock is held either way.
    ///
    /// # Panics
    ///
    /// Taking a lock the current thread already holds deadlocks or panics,
    /// as `std` documents; this one deadlocks.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::thread;
    /// use syncprof::Mutex;
    ///
    /// let mutex = Arc::new(Mutex::new(0));
    /// let c_mutex = Arc::clone(&mutex);
    /// thread::spawn(move || *c_mutex.lock().unwrap() = 10).join().unwrap();
    /// assert_eq!(*mutex.lock().unwrap(), 10);
    /// ```
    #[inline]
    pub fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
        if !self.raw.lock_fast() {
            self.raw.lock_slow(self.site);
        }
        // SAFETY: the lock was just taken by this thread.
        unsafe { MutexGuard::new(self) }
    }

    /// Takes the lock if it is free, without blocking (and without
    /// recording).
    ///
    /// # Errors
    ///
    /// [`TryLockError::WouldBlock`] if the lock is held;
    /// [`TryLockError::Poisoned`] (holding the guard) if it was free but is
    /// poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::TryLockError;
    /// use syncprof::Mutex;
    ///
    /// let mutex = Mutex::new(1);
    /// let guard = mutex.try_lock().unwrap();
    /// assert!(matches!(mutex.try_lock(), Err(TryLockError::WouldBlock)));
    /// drop(guard);
    /// ```
    #[inline]
    pub fn try_lock(&self) -> TryLockResult<MutexGuard<'_, T>> {
        if self.raw.try_lock() {
            // SAFETY: the lock was just taken by this thread.
            Ok(unsafe { MutexGuard::new(self) }?)
        } else {
            Err(TryLockError::WouldBlock)
        }
    }

    /// Whether the mutex is poisoned. Another thread may poison it right
    /// after this returns `false`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::thread;
    /// use syncprof::Mutex;
    ///
    /// let mutex = Arc::new(Mutex::new(0));
    /// let c_mutex = Arc::clone(&mutex);
    /// let _ = thread::spawn(move || {
    ///     let _guard = c_mutex.lock().unwrap();
    ///     panic!(); // the mutex gets poisoned
    /// })
    /// .join();
    /// assert!(mutex.is_poisoned());
    /// ```
    #[inline]
    pub fn is_poisoned(&self) -> bool {
        self.raw.poison.get()
    }

    /// Clears the poisoned state.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::thread;
    /// use syncprof::Mutex;
    ///
    /// let mutex = Arc::new(Mutex::new(0));
    /// let c_mutex = Arc::clone(&mutex);
    /// let _ = thread::spawn(move || {
    ///     let _guard = c_mutex.lock().unwrap();
    ///     panic!();
    /// })
    /// .join();
    /// let guard = mutex.lock().unwrap_or_else(|e| {
    ///     mutex.clear_poison();
    ///     e.into_inner()
    /// });
    /// drop(guard);
    /// assert!(!mutex.is_poisoned());
    /// ```
    #[inline]
    pub fn clear_poison(&self) {
        self.raw.poison.clear();
    }

    /// A mutable reference to the data, without locking: `&mut self` proves
    /// nobody else holds it.
    ///
    /// # Errors
    ///
    /// If the mutex is poisoned, the reference comes back inside the
    /// [`PoisonError`](std::sync::PoisonError).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut mutex = syncprof::Mutex::new(0);
    /// *mutex.get_mut().unwrap() = 10;
    /// assert_eq!(*mutex.lock().unwrap(), 10);
    /// ```
    #[inline]
    pub fn get_mut(&mut self) -> LockResult<&mut T> {
        let data = self.data.get_mut();
        if self.raw.poison.get() {
            Err(std::sync::PoisonError::new(data))
        } else {
            Ok(data)
        }
    }
}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    /// # Safety
    ///
    /// The calling thread holds `lock.raw`.
    #[inline]
    unsafe fn new(lock: &'a Mutex<T>) -> LockResult<MutexGuard<'a, T>> {
        poison::map_result(lock.raw.poison.guard(), |poison| MutexGuard {
            lock,
            poison,
            _not_send: PhantomData,
        })
    }

    /// The mutex this guard holds (for [`Condvar`](super::Condvar)).
    #[inline]
    pub(crate) fn mutex(guard: &Self) -> &'a Mutex<T> {
        guard.lock
    }
}

impl<T: ?Sized> Mutex<T> {
    /// The raw lock and its site (for [`Condvar`](super::Condvar)).
    #[inline]
    pub(crate) fn raw(&self) -> (&RawMutex, LockSite) {
        (&self.raw, self.site)
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock, so no `&mut T` exists elsewhere.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock and is borrowed mutably, so this is
        // the only reference to the data.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.raw.poison.done(&self.poison);
        // SAFETY: the guard holds the lock, taken by this thread (the guard is
        // not `Send`).
        if !unsafe { self.lock.raw.unlock_fast() } {
            self.lock.raw.unlock_slow(self.lock.site);
            crate::profile::keep_frame();
        }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: Default> Default for Mutex<T> {
    /// A mutex holding `T::default()`, labelled with the caller's location.
    #[track_caller]
    fn default() -> Mutex<T> {
        Mutex::new(T::default())
    }
}

impl<T> From<T> for Mutex<T> {
    /// A mutex holding `value`, labelled with the caller's location.
    #[track_caller]
    fn from(value: T) -> Mutex<T> {
        Mutex::new(value)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    /// `std`'s format. Never blocks: a held lock prints `data: "<locked>"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.try_lock() {
            Ok(guard) => d.field("data", &&*guard),
            Err(TryLockError::Poisoned(err)) => d.field("data", &&**err.get_ref()),
            Err(TryLockError::WouldBlock) => d.field("data", &"<locked>"),
        };
        d.field("poisoned", &self.raw.poison.get());
        d.finish_non_exhaustive()
    }
}
