//! [`ReentrantMutex`]: parking_lot 0.13's, with its creation site.

use core::panic::Location;
use std::time::{Duration, Instant};

use super::raw::{RawMutex, RawThreadId};

/// A mutex that the thread holding it may lock again
/// (`parking_lot::ReentrantMutex`): the data is shared (`&T`) only.
///
/// Records as [`Mutex`](super::Mutex): only the outermost lock can wait, and
/// only the outermost unlock can wake a waiter. A wrapper around
/// `lock_api::ReentrantMutex<RawMutex, RawThreadId, T>` (reached through
/// `Deref`), so that [`new`](Self::new) is `#[track_caller]`.
///
/// # Examples
///
/// ```
/// use syncprof::parking_lot::ReentrantMutex;
///
/// let m = ReentrantMutex::new(1);
/// let a = m.lock();
/// let b = m.lock(); // the same thread: no deadlock
/// assert_eq!(*a + *b, 2);
/// ```
#[repr(transparent)]
pub struct ReentrantMutex<T: ?Sized> {
    inner: lock_api::ReentrantMutex<RawMutex, RawThreadId, T>,
}

/// The guard of a [`ReentrantMutex`]: `lock_api`'s, as parking_lot's.
pub type ReentrantMutexGuard<'a, T> = lock_api::ReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;

/// A [`ReentrantMutexGuard`] mapped to a part of the data.
pub type MappedReentrantMutexGuard<'a, T> =
    lock_api::MappedReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;

impl<T> ReentrantMutex<T> {
    /// Creates an unlocked reentrant mutex holding `value`, labelled with the
    /// caller's location.
    #[track_caller]
    #[inline]
    pub const fn new(value: T) -> Self {
        ReentrantMutex {
            inner: lock_api::ReentrantMutex::from_raw(
                RawMutex::with_site(Location::caller()),
                RawThreadId,
                value,
            ),
        }
    }

    /// Consumes the mutex and returns its data.
    #[inline]
    pub fn into_inner(self) -> T {
        self.inner.into_inner()
    }
}

impl<T: ?Sized> ReentrantMutex<T> {
    /// Takes the lock (at once if this thread holds it already).
    #[inline]
    pub fn lock(&self) -> ReentrantMutexGuard<'_, T> {
        self.inner.lock()
    }

    /// Takes the lock if it is free or held by this thread.
    #[inline]
    pub fn try_lock(&self) -> Option<ReentrantMutexGuard<'_, T>> {
        self.inner.try_lock()
    }

    /// Takes the lock, waiting at most `timeout`.
    #[inline]
    pub fn try_lock_for(&self, timeout: Duration) -> Option<ReentrantMutexGuard<'_, T>> {
        self.inner.try_lock_for(timeout)
    }

    /// Takes the lock, waiting until `deadline` at most.
    #[inline]
    pub fn try_lock_until(&self, deadline: Instant) -> Option<ReentrantMutexGuard<'_, T>> {
        self.inner.try_lock_until(deadline)
    }

    /// A mutable reference to the data.
    #[inline]
    pub fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut()
    }

    /// Whether the mutex is locked (a racy snapshot).
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }

    /// Whether the current thread holds the lock.
    #[inline]
    pub fn is_owned_by_current_thread(&self) -> bool {
        self.inner.is_owned_by_current_thread()
    }

    /// A raw pointer to the data.
    #[inline]
    pub fn data_ptr(&self) -> *mut T {
        self.inner.data_ptr()
    }
}

wrapper_impls!(ReentrantMutex, lock_api::ReentrantMutex<RawMutex, RawThreadId, T>);
