//! The `arc_lock` methods (feature `arc_lock`, as parking_lot's): guards
//! that keep an `Arc` of their lock instead of borrowing it, so they are
//! `'static` (`lock_arc`, `read_arc`, `write_arc`, `upgradable_read_arc`
//! and their `try_*` forms). The guards are `lock_api`'s `Arc*Guard` types,
//! as parking_lot's, and record exactly as the borrowing guards do.
//!
//! Each wrapper is `#[repr(transparent)]` over its `lock_api` lock, so an
//! `Arc` of the wrapper is an `Arc` of that lock; the guards hold the latter
//! (`ArcMutexGuard::mutex` returns `&Arc<lock_api::Mutex<RawMutex, T>>`
//! where parking_lot's returns `&Arc<parking_lot::Mutex<T>>`, the same type
//! there).

use std::sync::Arc;
use std::time::{Duration, Instant};

use lock_api::{ArcMutexGuard, ArcReentrantMutexGuard};
use lock_api::{ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard, ArcRwLockWriteGuard};

use super::raw::{RawFairMutex, RawMutex, RawRwLock, RawRwLockRecursive, RawThreadId};
use super::{FairMutex, Mutex, RecursiveRwLock, ReentrantMutex, RwLock};

/// `Arc<Wrapper>` to `Arc<Inner>` for a `#[repr(transparent)]` wrapper.
macro_rules! inner_arc {
    ($this:expr, $inner:ty) => {{
        let raw = Arc::into_raw(Arc::clone($this)) as *const $inner;
        // SAFETY: the wrapper is `#[repr(transparent)]` over `$inner`, so
        // both have the same size, alignment and pointer metadata, which is
        // what `Arc::from_raw` requires of a pointer from another type's
        // `Arc::into_raw`; the clone's strong count moves to the new `Arc`.
        unsafe { Arc::from_raw(raw) }
    }};
}

macro_rules! mutex_arc {
    ($name:ident, $raw:ty) => {
        impl<T: ?Sized> $name<T> {
            /// Takes the lock, blocking until it is free; the guard holds
            /// an `Arc` of the lock. Records as [`lock`](Self::lock).
            #[inline]
            pub fn lock_arc(self: &Arc<Self>) -> ArcMutexGuard<$raw, T> {
                inner_arc!(self, lock_api::Mutex<$raw, T>).lock_arc()
            }

            /// Takes the lock if it is free, without blocking.
            #[inline]
            pub fn try_lock_arc(self: &Arc<Self>) -> Option<ArcMutexGuard<$raw, T>> {
                inner_arc!(self, lock_api::Mutex<$raw, T>).try_lock_arc()
            }

            /// Takes the lock, waiting at most `timeout`.
            #[inline]
            pub fn try_lock_arc_for(
                self: &Arc<Self>,
                timeout: Duration,
            ) -> Option<ArcMutexGuard<$raw, T>> {
                inner_arc!(self, lock_api::Mutex<$raw, T>).try_lock_arc_for(timeout)
            }

            /// Takes the lock, waiting until `deadline` at most.
            #[inline]
            pub fn try_lock_arc_until(
                self: &Arc<Self>,
                deadline: Instant,
            ) -> Option<ArcMutexGuard<$raw, T>> {
                inner_arc!(self, lock_api::Mutex<$raw, T>).try_lock_arc_until(deadline)
            }
        }
    };
}

mutex_arc!(Mutex, RawMutex);
mutex_arc!(FairMutex, RawFairMutex);

type ReentrantInner<T> = lock_api::ReentrantMutex<RawMutex, RawThreadId, T>;

impl<T: ?Sized> ReentrantMutex<T> {
    /// Takes the lock (again, on the thread that holds it), blocking until
    /// it is free; the guard holds an `Arc` of the lock.
    #[inline]
    pub fn lock_arc(self: &Arc<Self>) -> ArcReentrantMutexGuard<RawMutex, RawThreadId, T> {
        inner_arc!(self, ReentrantInner<T>).lock_arc()
    }

    /// Takes the lock if it is free (or held by this thread).
    #[inline]
    pub fn try_lock_arc(
        self: &Arc<Self>,
    ) -> Option<ArcReentrantMutexGuard<RawMutex, RawThreadId, T>> {
        inner_arc!(self, ReentrantInner<T>).try_lock_arc()
    }

    /// Takes the lock, waiting at most `timeout`.
    #[inline]
    pub fn try_lock_arc_for(
        self: &Arc<Self>,
        timeout: Duration,
    ) -> Option<ArcReentrantMutexGuard<RawMutex, RawThreadId, T>> {
        inner_arc!(self, ReentrantInner<T>).try_lock_arc_for(timeout)
    }

    /// Takes the lock, waiting until `deadline` at most.
    #[inline]
    pub fn try_lock_arc_until(
        self: &Arc<Self>,
        deadline: Instant,
    ) -> Option<ArcReentrantMutexGuard<RawMutex, RawThreadId, T>> {
        inner_arc!(self, ReentrantInner<T>).try_lock_arc_until(deadline)
    }
}

macro_rules! rwlock_arc {
    ($name:ident, $raw:ty) => {
        impl<T: ?Sized> $name<T> {
            /// Takes a read lock, blocking as [`read`](Self::read) does; the
            /// guard holds an `Arc` of the lock.
            #[inline]
            pub fn read_arc(self: &Arc<Self>) -> ArcRwLockReadGuard<$raw, T> {
                inner_arc!(self, lock_api::RwLock<$raw, T>).read_arc()
            }

            /// Takes a read lock if it is available now.
            #[inline]
            pub fn try_read_arc(self: &Arc<Self>) -> Option<ArcRwLockReadGuard<$raw, T>> {
                inner_arc!(self, lock_api::RwLock<$raw, T>).try_read_arc()
            }

            /// Takes a read lock, waiting at most `timeout`.
            #[inline]
            pub fn try_read_arc_for(
                self: &Arc<Self>,
                timeout: Duration,
            ) -> Option<ArcRwLockReadGuard<$raw, T>> {
                inner_arc!(self, lock_api::RwLock<$raw, T>).try_read_arc_for(timeout)
            }

            /// Takes a read lock, waiting until `deadline` at most.
            #[inline]
            pub fn try_read_arc_until(
                self: &Arc<Self>,
                deadline: Instant,
            ) -> Option<ArcRwLockReadGuard<$raw, T>> {
                inner_arc!(self, lock_api::RwLock<$raw, T>).try_read_arc_until(deadline)
            }

            /// Takes the write lock, blocking as [`write`](Self::write) does;
            /// the guard holds an `Arc` of the lock.
            #[inline]
            pub fn write_arc(self: &Arc<Self>) -> ArcRwLockWriteGuard<$raw, T> {
                inner_arc!(self, lock_api::RwLock<$raw, T>).write_arc()
            }

            /// Takes the write lock if it is free now.
            #[inline]
            pub fn try_write_arc(self: &Arc<Self>) -> Option<ArcRwLockWriteGuard<$raw, T>> {
                inner_arc!(self, lock_api::RwLock<$raw, T>).try_write_arc()
            }

            /// Takes the write lock, waiting at most `timeout`.
            #[inline]
            pub fn try_write_arc_for(
                self: &Arc<Self>,
                timeout: Duration,
            ) -> Option<ArcRwLockWriteGuard<$raw, T>> {
                inner_arc!(self, lock_api::RwLock<$raw, T>).try_write_arc_for(timeout)
            }

            /// Takes the write lock, waiting until `deadline` at most.
            #[inline]
            pub fn try_write_arc_until(
                self: &Arc<Self>,
                deadline: Instant,
            ) -> Option<ArcRwLockWriteGuard<$raw, T>> {
                inner_arc!(self, lock_api::RwLock<$raw, T>).try_write_arc_until(deadline)
            }

            /// Takes an upgradable read lock, blocking as
            /// [`upgradable_read`](Self::upgradable_read) does; the guard
            /// holds an `Arc` of the lock.
            #[inline]
            pub fn upgradable_read_arc(
                self: &Arc<Self>,
            ) -> ArcRwLockUpgradableReadGuard<$raw, T> {
                inner_arc!(self, lock_api::RwLock<$raw, T>).upgradable_read_arc()
            }

            /// Takes an upgradable read lock if it is available now.
            #[inline]
            pub fn try_upgradable_read_arc(
                self: &Arc<Self>,
            ) -> Option<ArcRwLockUpgradableReadGuard<$raw, T>> {
                inner_arc!(self, lock_api::RwLock<$raw, T>).try_upgradable_read_arc()
            }

            /// Takes an upgradable read lock, waiting at most `timeout`.
            #[inline]
            pub fn try_upgradable_read_arc_for(
                self: &Arc<Self>,
                timeout: Duration,
            ) -> Option<ArcRwLockUpgradableReadGuard<$raw, T>> {
                inner_arc!(self, lock_api::RwLock<$raw, T>).try_upgradable_read_arc_for(timeout)
            }

            /// Takes an upgradable read lock, waiting until `deadline` at
            /// most.
            #[inline]
            pub fn try_upgradable_read_arc_until(
                self: &Arc<Self>,
                deadline: Instant,
            ) -> Option<ArcRwLockUpgradableReadGuard<$raw, T>> {
                inner_arc!(self, lock_api::RwLock<$raw, T>).try_upgradable_read_arc_until(deadline)
            }
        }
    };
}

rwlock_arc!(RwLock, RawRwLock);
rwlock_arc!(RecursiveRwLock, RawRwLockRecursive);
