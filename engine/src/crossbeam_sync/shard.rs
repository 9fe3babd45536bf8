//! syncprof's own file: the reader-writer lock of one shard of a
//! [`ShardedLock`](super::ShardedLock): the engine's recording raw rwlock
//! (`lock_api_raw::RawRwLock`, the very lock behind `syncprof::RwLock`)
//! with `std::sync::RwLock`'s API and poisoning, so that the copied
//! `sharded_lock.rs` changes only its imports.

use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};
use core::panic::Location;
use core::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult};
use std::thread;

use crate::lock_api_raw::{GuardMarker, RawRwLock};
use crate::profile::keep_frame;

/// `std::sync::RwLock`'s API over the engine's recording rwlock: a wait for
/// it is a block event of kind `rwlock_read` / `rwlock_write`, a contended
/// unlock a mutex event charged by the N-waiter rule.
pub(crate) struct RwLock<T> {
    inner: lock_api::RwLock<RawRwLock, T>,
    /// Set when a write guard is dropped by a panic (as std's flag).
    /// Relaxed: it orders nothing, the lock does.
    poisoned: AtomicBool,
}

impl<T> RwLock<T> {
    /// An unlocked lock holding `value`, labelled `site`.
    pub(crate) fn with_site(value: T, site: &'static Location<'static>) -> RwLock<T> {
        RwLock {
            inner: lock_api::RwLock::from_raw(RawRwLock::with_site(site), value),
            poisoned: AtomicBool::new(false),
        }
    }

    /// Whether a writer panicked while holding the lock.
    pub(crate) fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Relaxed)
    }

    fn poison_result<G>(&self, guard: G) -> LockResult<G> {
        if self.is_poisoned() {
            Err(PoisonError::new(guard))
        } else {
            Ok(guard)
        }
    }

    fn try_poison_result<G>(&self, guard: Option<G>) -> TryLockResult<G> {
        match guard {
            None => Err(TryLockError::WouldBlock),
            Some(guard) => self.poison_result(guard).map_err(TryLockError::Poisoned),
        }
    }

    /// A read lock, waiting for it. Always inlined, with the raw lock's
    /// slow path called from here, so that a wait's stack starts at
    /// `ShardedLock::read` (lock_api's `read` is not inlined in debug builds).
    #[inline(always)]
    pub(crate) fn read(&self) -> LockResult<RwLockReadGuard<'_, T>> {
        // SAFETY: the raw lock is only locked here and unlocked by the guard.
        let raw = unsafe { self.inner.raw() };
        if !raw.inner.read_fast() {
            raw.inner.read_slow(raw.site);
            keep_frame();
        }
        // SAFETY: this thread took a read lock just above; the guard gives
        // it back.
        let guard = unsafe { self.inner.make_read_guard_unchecked(GuardMarker::new()) };
        let guard = RwLockReadGuard(guard, PhantomData);
        self.poison_result(guard)
    }

    /// A read lock if one can be taken now.
    #[inline]
    pub(crate) fn try_read(&self) -> TryLockResult<RwLockReadGuard<'_, T>> {
        let guard = self.inner.try_read();
        self.try_poison_result(guard.map(|guard| RwLockReadGuard(guard, PhantomData)))
    }

    /// The write lock, waiting for it. Always inlined, as [`Self::read`].
    #[inline(always)]
    pub(crate) fn write(&self) -> LockResult<RwLockWriteGuard<'_, T>> {
        // SAFETY: the raw lock is only locked here and unlocked by the guard.
        let raw = unsafe { self.inner.raw() };
        if !raw.inner.write_fast() {
            raw.inner.write_slow(raw.site);
            keep_frame();
        }
        // SAFETY: this thread took the write lock just above; the guard
        // gives it back.
        let guard = unsafe { self.inner.make_write_guard_unchecked(GuardMarker::new()) };
        let guard = RwLockWriteGuard::new(self, guard);
        self.poison_result(guard)
    }

    /// The write lock if it can be taken now.
    #[inline]
    pub(crate) fn try_write(&self) -> TryLockResult<RwLockWriteGuard<'_, T>> {
        let guard = self.inner.try_write();
        self.try_poison_result(guard.map(|guard| RwLockWriteGuard::new(self, guard)))
    }
}

/// A read lock of a shard. Not `Send`, as std's (also when the engine's
/// `send_guard` feature makes lock_api's guards `Send`).
pub(crate) struct RwLockReadGuard<'a, T: ?Sized>(
    lock_api::RwLockReadGuard<'a, RawRwLock, T>,
    PhantomData<*const ()>,
);

/// The write lock of a shard; poisons the lock when dropped by a panic that
/// started while it was held. Not `Send`, as std's.
pub(crate) struct RwLockWriteGuard<'a, T: ?Sized> {
    guard: lock_api::RwLockWriteGuard<'a, RawRwLock, T>,
    poisoned: &'a AtomicBool,
    panicking: bool,
    _not_send: PhantomData<*const ()>,
}

impl<'a, T> RwLockWriteGuard<'a, T> {
    fn new(lock: &'a RwLock<T>, guard: lock_api::RwLockWriteGuard<'a, RawRwLock, T>) -> Self {
        RwLockWriteGuard {
            guard,
            poisoned: &lock.poisoned,
            panicking: thread::panicking(),
            _not_send: PhantomData,
        }
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    fn drop(&mut self) {
        if !self.panicking && thread::panicking() {
            self.poisoned.store(true, Ordering::Relaxed);
        }
    }
}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}
