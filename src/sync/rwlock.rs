//! [`RwLock`]: `std::sync::RwLock`'s API on [`RawRwLock`].

use core::cell::UnsafeCell;
use core::fmt;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};
use core::panic::{Location, RefUnwindSafe, UnwindSafe};
use core::ptr::NonNull;

use super::poison::{self, LockResult, PoisonError, TryLockError, TryLockResult};
use crate::profile::LockSite;
use crate::raw::rwlock::RawRwLock;

/// A reader-writer lock: a drop-in replacement for [`std::sync::RwLock`]
/// that records contention.
///
/// The API, poisoning and `Send`/`Sync` bounds are `std`'s. What differs:
///
/// - **It records.** A [`read`](Self::read) or [`write`](Self::write) that
///   has to wait is one block-profile event (kind `rwlock_read` or
///   `rwlock_write`); an unlock that wakes waiting writers or readers is one
///   mutex-profile event on the unlocker's stack (kind of the unlocking
///   guard), charged with the waiters' delay (woken readers exactly; a woken
///   writer and the writers still queued by Go's N-waiter rule). Both carry
///   `lock=<site of RwLock::new>`.
/// - **Throughput first, bounded waits**: as in `parking_lot`, an unlock
///   releases the lock and wakes the waiters to compete for it. A waiting
///   writer keeps new readers out while it waits, so the readers inside
///   drain and the last one out wakes it (a continuous flood of readers
///   cannot starve it); a write unlock that wakes a writer lets readers in
///   until that writer runs and keeps them out again. A waiter that has
///   waited longer than ~0.5 ms gets the lock handed over if it is free, at
///   most once per 10 ms per lock (with more threads than cores, a lock
///   handed over waits for its new holder to get a core). A
///   thread that takes a read lock it already holds while a writer waits
///   deadlocks (`std` allows this to deadlock too).
///
/// # Poisoning
///
/// As in `std`: a panic while a **write** guard is held poisons the lock;
/// later `read`/`write` calls return an [`Err`] holding the guard.
///
/// # Examples
///
/// ```
/// use syncprof::RwLock;
///
/// let lock = RwLock::new(5);
/// {
///     let r1 = lock.read().unwrap();
///     let r2 = lock.read().unwrap();
///     assert_eq!(*r1 + *r2, 10);
/// }
/// *lock.write().unwrap() += 1;
/// assert_eq!(*lock.read().unwrap(), 6);
/// ```
pub struct RwLock<T: ?Sized> {
    state: State,
    data: UnsafeCell<T>,
}

/// The lock without its data: what a read guard needs to unlock, so that the
/// guard can hold the data as a `NonNull<T>` (covariant in `T`, as `std`'s)
/// rather than as a `&RwLock<T>` (invariant).
struct State {
    raw: RawRwLock,
    site: LockSite,
}

// The state is only atomics and a `&'static Location`; a panic cannot leave
// it broken (the poison flag is how a panic is reported), as `std` says of
// its own lock.
impl UnwindSafe for State {}
impl RefUnwindSafe for State {}

// SAFETY: sharing an `RwLock<T>` hands out `&mut T` to one thread (`T: Send`)
// or `&T` to several at once (`T: Sync`), as `std`'s.
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLock<T> {}

impl<T: ?Sized> UnwindSafe for RwLock<T> {}
impl<T: ?Sized> RefUnwindSafe for RwLock<T> {}

/// An RAII shared (read) guard, released when dropped.
///
/// As `std`'s: not `Send`, `Sync` when `T: Sync`, covariant in `T` (a guard
/// of `&'static U` may be used as a guard of `&'a U`), and unwind-safe only
/// when `T: RefUnwindSafe`.
#[must_use = "if unused the RwLock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct RwLockReadGuard<'a, T: ?Sized + 'a> {
    /// The data; `NonNull` rather than `&'a T` because the guard's `Drop`
    /// releases the lock, after which the reference would dangle in a
    /// `noalias` sense (std's reason too).
    data: NonNull<T>,
    state: &'a State,
    _not_send: PhantomData<*const ()>,
}

// SAFETY: a shared read guard only gives `&T` (as `std`'s).
unsafe impl<T: ?Sized + Sync> Sync for RwLockReadGuard<'_, T> {}

/// An RAII exclusive (write) guard, released when dropped. Not `Send`.
#[must_use = "if unused the RwLock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct RwLockWriteGuard<'a, T: ?Sized + 'a> {
    lock: &'a RwLock<T>,
    poison: poison::Guard,
    _not_send: PhantomData<*const ()>,
}

// SAFETY: a shared `&RwLockWriteGuard` only gives `&T` (as `std`'s).
unsafe impl<T: ?Sized + Sync> Sync for RwLockWriteGuard<'_, T> {}

impl<T> RwLock<T> {
    syncprof_engine::const_fn! {
        /// Creates an unlocked lock holding `value`, labelled with the
        /// caller's location.
        ///
        /// # Examples
        ///
        /// ```
        /// static CONFIG: syncprof::RwLock<u32> = syncprof::RwLock::new(7);
        /// assert_eq!(*CONFIG.read().unwrap(), 7);
        /// ```
        #[track_caller]
        #[inline]
        pub fn new(value: T) -> RwLock<T> {
            RwLock {
                state: State { raw: RawRwLock::new(), site: Location::caller() },
                data: UnsafeCell::new(value),
            }
        }
    }

    /// Consumes the lock and returns its data.
    ///
    /// # Errors
    ///
    /// If the lock is poisoned, the data comes back inside the
    /// [`PoisonError`].
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = syncprof::RwLock::new(String::from("x"));
    /// assert_eq!(lock.into_inner().unwrap(), "x");
    /// ```
    pub fn into_inner(self) -> LockResult<T>
    where
        T: Sized,
    {
        let poisoned = self.state.raw.poison.get();
        let data = self.data.into_inner();
        if poisoned {
            Err(PoisonError::new(data))
        } else {
            Ok(data)
        }
    }
}

impl<T: ?Sized> RwLock<T> {
    /// Takes a shared read lock, blocking while a writer holds or waits for
    /// the lock. A call that waits is recorded (kind `rwlock_read`).
    ///
    /// # Errors
    ///
    /// If the lock is poisoned, the guard comes back inside the
    /// [`PoisonError`]; the lock is held either way.
    ///
    /// # Panics
    ///
    /// If the number of readers overflows.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = syncprof::RwLock::new(1);
    /// assert_eq!(*lock.read().unwrap(), 1);
    /// ```
    #[inline]
    pub fn read(&self) -> LockResult<RwLockReadGuard<'_, T>> {
        if !self.state.raw.read_fast() {
            self.state.raw.read_slow(self.state.site);
        }
        // SAFETY: this thread just took a read lock.
        unsafe { RwLockReadGuard::new(self) }
    }

    /// Takes a read lock if no writer holds or waits for it.
    ///
    /// # Errors
    ///
    /// [`TryLockError::WouldBlock`] if it cannot be taken now;
    /// [`TryLockError::Poisoned`] (holding the guard) if taken but poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = syncprof::RwLock::new(1);
    /// let _w = lock.write().unwrap();
    /// assert!(lock.try_read().is_err());
    /// ```
    #[inline]
    pub fn try_read(&self) -> TryLockResult<RwLockReadGuard<'_, T>> {
        if self.state.raw.try_read() {
            // SAFETY: this thread just took a read lock.
            Ok(unsafe { RwLockReadGuard::new(self) }?)
        } else {
            Err(TryLockError::WouldBlock)
        }
    }

    /// Takes the exclusive write lock, blocking until no reader or writer
    /// holds it. A call that waits is recorded (kind `rwlock_write`).
    ///
    /// # Errors
    ///
    /// If the lock is poisoned, the guard comes back inside the
    /// [`PoisonError`]; the lock is held either way.
    ///
    /// # Panics
    ///
    /// Taking the write lock while this thread holds the lock deadlocks.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = syncprof::RwLock::new(1);
    /// *lock.write().unwrap() = 2;
    /// assert_eq!(*lock.read().unwrap(), 2);
    /// ```
    #[inline]
    pub fn write(&self) -> LockResult<RwLockWriteGuard<'_, T>> {
        if !self.state.raw.write_fast() {
            self.state.raw.write_slow(self.state.site);
        }
        // SAFETY: this thread just took the write lock.
        unsafe { RwLockWriteGuard::new(self) }
    }

    /// Takes the write lock if it is free.
    ///
    /// # Errors
    ///
    /// [`TryLockError::WouldBlock`] if it is held;
    /// [`TryLockError::Poisoned`] (holding the guard) if taken but poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = syncprof::RwLock::new(1);
    /// let _r = lock.read().unwrap();
    /// assert!(lock.try_write().is_err());
    /// ```
    #[inline]
    pub fn try_write(&self) -> TryLockResult<RwLockWriteGuard<'_, T>> {
        if self.state.raw.try_write() {
            // SAFETY: this thread just took the write lock.
            Ok(unsafe { RwLockWriteGuard::new(self) }?)
        } else {
            Err(TryLockError::WouldBlock)
        }
    }

    /// Whether the lock is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = syncprof::RwLock::new(0);
    /// assert!(!lock.is_poisoned());
    /// ```
    #[inline]
    pub fn is_poisoned(&self) -> bool {
        self.state.raw.poison.get()
    }

    /// Clears the poisoned state.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// let lock = Arc::new(syncprof::RwLock::new(0));
    /// let c = Arc::clone(&lock);
    /// let _ = std::thread::spawn(move || {
    ///     let _w = c.write().unwrap();
    ///     panic!();
    /// })
    /// .join();
    /// assert!(lock.is_poisoned());
    /// lock.clear_poison();
    /// assert!(!lock.is_poisoned());
    /// ```
    #[inline]
    pub fn clear_poison(&self) {
        self.state.raw.poison.clear();
    }

    /// A mutable reference to the data, without locking.
    ///
    /// # Errors
    ///
    /// If the lock is poisoned, the reference comes back inside the
    /// [`PoisonError`].
    ///
    /// # Examples
    ///
    /// ```
    /// let mut lock = syncprof::RwLock::new(0);
    /// *lock.get_mut().unwrap() = 10;
    /// assert_eq!(*lock.read().unwrap(), 10);
    /// ```
    #[inline]
    pub fn get_mut(&mut self) -> LockResult<&mut T> {
        let data = self.data.get_mut();
        if self.state.raw.poison.get() {
            Err(PoisonError::new(data))
        } else {
            Ok(data)
        }
    }
}

impl<'a, T: ?Sized> RwLockReadGuard<'a, T> {
    /// # Safety
    ///
    /// The calling thread holds a read lock on `lock.raw`.
    #[inline]
    unsafe fn new(lock: &'a RwLock<T>) -> LockResult<RwLockReadGuard<'a, T>> {
        let guard = RwLockReadGuard::held(lock);
        if lock.state.raw.poison.get() {
            Err(PoisonError::new(guard))
        } else {
            Ok(guard)
        }
    }
}

impl<'a, T: ?Sized> RwLockReadGuard<'a, T> {
    /// The guard of a read lock this thread holds on `lock` (the caller
    /// ensures it does).
    #[inline]
    fn held(lock: &'a RwLock<T>) -> RwLockReadGuard<'a, T> {
        RwLockReadGuard {
            // SAFETY: `UnsafeCell::get` of a reference is never null.
            data: unsafe { NonNull::new_unchecked(lock.data.get()) },
            state: &lock.state,
            _not_send: PhantomData,
        }
    }
}

impl<'a, T: ?Sized> RwLockWriteGuard<'a, T> {
    /// # Safety
    ///
    /// The calling thread holds the write lock on `lock.raw`.
    #[inline]
    unsafe fn new(lock: &'a RwLock<T>) -> LockResult<RwLockWriteGuard<'a, T>> {
        poison::map_result(lock.state.raw.poison.guard(), |poison| RwLockWriteGuard {
            lock,
            poison,
            _not_send: PhantomData,
        })
    }
}

impl<'a, T: ?Sized> RwLockWriteGuard<'a, T> {
    /// Turns a write guard into a read guard without releasing the lock in
    /// between, as `std`'s `RwLockWriteGuard::downgrade`: no writer can get
    /// in between this thread's write and its read. Readers parked behind
    /// the write lock are admitted along with it (and their waits charged
    /// to this call in the mutex profile, kind `rwlock_write`).
    ///
    /// Not supported inside a `#[global_allocator]` that itself uses the
    /// lock (see `docs/testing.md`, Inside a global allocator).
    ///
    /// # Examples
    ///
    /// ```
    /// use syncprof::{RwLock, RwLockWriteGuard};
    ///
    /// let lock = RwLock::new(1);
    /// let mut w = lock.write().unwrap();
    /// *w += 41;
    /// let r = RwLockWriteGuard::downgrade(w);
    /// assert_eq!(*r, 42);
    /// assert!(lock.try_read().is_ok(), "other readers may join");
    /// assert!(lock.try_write().is_err(), "writers may not");
    /// ```
    pub fn downgrade(s: Self) -> RwLockReadGuard<'a, T> {
        let lock = s.lock;
        lock.state.raw.poison.done(&s.poison);
        // The write lock becomes the read lock: the write guard's `Drop`
        // (which would unlock) must not run.
        core::mem::forget(s);
        // SAFETY: the guard held the write lock, taken by this thread.
        if !unsafe { lock.state.raw.downgrade_fast() } {
            // SAFETY: as above; the fast path did not change the lock.
            unsafe { lock.state.raw.downgrade_slow(lock.state.site) };
            crate::profile::keep_frame();
        }
        RwLockReadGuard::held(lock)
    }
}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: `data` points into the lock, which outlives `'a`; a read
        // lock is held, so no `&mut T` exists.
        unsafe { self.data.as_ref() }
    }
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the write lock is held: no other reference exists.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the write lock is held and the guard borrowed mutably.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the guard holds a read lock taken by this thread.
        if !unsafe { self.state.raw.read_unlock_fast() } {
            self.state.raw.read_unlock_slow(self.state.site);
            crate::profile::keep_frame();
        }
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.state.raw.poison.done(&self.poison);
        // SAFETY: the guard holds the write lock, taken by this thread.
        if !unsafe { self.lock.state.raw.write_unlock_fast() } {
            // SAFETY: as above; the fast path did not release it.
            unsafe { self.lock.state.raw.write_unlock_slow(self.lock.state.site) };
            crate::profile::keep_frame();
        }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: Default> Default for RwLock<T> {
    /// A lock holding `T::default()`, labelled with the caller's location.
    #[track_caller]
    fn default() -> RwLock<T> {
        RwLock::new(T::default())
    }
}

impl<T> From<T> for RwLock<T> {
    /// A lock holding `value`, labelled with the caller's location.
    #[track_caller]
    fn from(value: T) -> RwLock<T> {
        RwLock::new(value)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
    /// `std`'s format. Never blocks: a write-locked lock prints
    /// `data: <locked>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RwLock");
        match self.try_read() {
            Ok(guard) => d.field("data", &&*guard),
            Err(TryLockError::Poisoned(err)) => d.field("data", &&**err.get_ref()),
            Err(TryLockError::WouldBlock) => d.field("data", &format_args!("<locked>")),
        };
        d.field("poisoned", &self.state.raw.poison.get());
        d.finish_non_exhaustive()
    }
}
