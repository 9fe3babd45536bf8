//! [`RwLock`]: `tokio::sync::RwLock`'s API over a `tokio::sync::RwLock<()>`
//! (tokio's fair, write-preferring semaphore does the locking) and the data
//! cell, with both profiles.

use core::cell::UnsafeCell;
use core::fmt;
use core::future::Future;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ops::{Deref, DerefMut};
use core::panic::Location;
use std::sync::Arc;

use super::TryLockError;
use super::wait::{Held, WaitQueue, assert_may_block, blocking_slow, recorded};
use crate::profile::{EventKind, keep_frame};

mod guards;

type TokioRead<'a> = tokio::sync::RwLockReadGuard<'a, ()>;
type TokioWrite<'a> = tokio::sync::RwLockWriteGuard<'a, ()>;
type ReadHeld<'a> = Held<'a, TokioRead<'a>>;
type WriteHeld<'a> = Held<'a, TokioWrite<'a>>;

/// An asynchronous reader-writer lock: a drop-in replacement for
/// [`tokio::sync::RwLock`] that records contention.
///
/// Same API and semantics as tokio's (fair: a queued writer holds back later
/// readers; at most `max_readers` readers), which does the locking. It
/// records a `read().await` / `write().await` that returned `Pending` (kinds
/// `async_rwlock_read` / `async_rwlock_write`, the task's stack, labelled
/// `cancelled=true` if dropped waiting), and charges a guard drop that lets
/// queued tasks in to the mutex profile (Go >= 1.22's rule). A downgrade
/// admits the queued readers uncharged: their wait is charged to later
/// releases only while they are still queued.
///
/// # Examples
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let lock = syncprof::tokio::RwLock::new(5);
/// {
///     let r1 = lock.read().await;
///     let r2 = lock.read().await;
///     assert_eq!(*r1 + *r2, 10);
/// }
/// *lock.write().await += 1;
/// assert_eq!(*lock.read().await, 6);
/// # });
/// ```
pub struct RwLock<T: ?Sized> {
    queue: WaitQueue,
    lock: tokio::sync::RwLock<()>,
    data: UnsafeCell<T>,
}

// SAFETY: readers share `&T` across threads (`T: Sync`), a writer gets `&mut
// T` on any thread (`T: Send`): tokio's bounds.
unsafe impl<T: ?Sized + Send> Send for RwLock<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLock<T> {}

/// Shared access to a [`RwLock`]'s data (or a component of it, after
/// [`map`](Self::map)), released on drop.
#[must_use = "if unused the RwLock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    held: ReadHeld<'a>,
    data: *const T,
    _marker: PhantomData<&'a T>,
}

/// Exclusive access to a [`RwLock`]'s data, released on drop.
#[must_use = "if unused the RwLock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    held: WriteHeld<'a>,
    lock: &'a RwLock<T>,
}

/// Exclusive access to a component of a [`RwLock`]'s data.
#[must_use = "if unused the RwLock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct RwLockMappedWriteGuard<'a, T: ?Sized> {
    held: WriteHeld<'a>,
    data: *mut T,
    _marker: PhantomData<&'a mut T>,
}

/// Owned shared access to (a component `U` of) an `Arc`'d [`RwLock<T>`]'s data.
#[must_use = "if unused the RwLock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct OwnedRwLockReadGuard<T: ?Sized, U: ?Sized = T> {
    held: ReadHeld<'static>,
    data: *const U,
    lock: Arc<RwLock<T>>,
}

/// Owned exclusive access to an `Arc`'d [`RwLock`]'s data.
#[must_use = "if unused the RwLock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct OwnedRwLockWriteGuard<T: ?Sized> {
    held: WriteHeld<'static>,
    lock: Arc<RwLock<T>>,
}

/// Owned exclusive access to a component `U` of an `Arc`'d [`RwLock<T>`]'s data.
#[must_use = "if unused the RwLock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct OwnedRwLockMappedWriteGuard<T: ?Sized, U: ?Sized = T> {
    held: WriteHeld<'static>,
    data: *mut U,
    lock: Arc<RwLock<T>>,
}

// Tokio's bounds for the same guards: a read guard stands for `&T`, a write
// guard for `&mut T`; owned guards also keep the `Arc`.
// SAFETY: see above.
unsafe impl<T: ?Sized + Sync> Send for RwLockReadGuard<'_, T> {}
// SAFETY: see above.
unsafe impl<T: ?Sized + Sync> Sync for RwLockReadGuard<'_, T> {}
// SAFETY: see above.
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLockWriteGuard<'_, T> {}
// SAFETY: see above.
unsafe impl<T: ?Sized + Send + Sync> Send for RwLockMappedWriteGuard<'_, T> {}
// SAFETY: see above.
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLockMappedWriteGuard<'_, T> {}
// SAFETY: see above.
unsafe impl<T: ?Sized + Send + Sync, U: ?Sized + Sync> Send for OwnedRwLockReadGuard<T, U> {}
// SAFETY: see above.
unsafe impl<T: ?Sized + Send + Sync, U: ?Sized + Send + Sync> Sync for OwnedRwLockReadGuard<T, U> {}
// SAFETY: see above.
unsafe impl<T: ?Sized + Send + Sync> Sync for OwnedRwLockWriteGuard<T> {}
// SAFETY: see above.
unsafe impl<T: ?Sized + Send + Sync, U: ?Sized + Send + Sync> Send
    for OwnedRwLockMappedWriteGuard<T, U>
{
}
// SAFETY: see above.
unsafe impl<T: ?Sized + Send + Sync, U: ?Sized + Send + Sync> Sync
    for OwnedRwLockMappedWriteGuard<T, U>
{
}

/// Extends a hold's lifetime to `'static` for an owned guard.
///
/// # Safety
///
/// The hold borrows from a lock inside an `Arc` that the owned guard keeps
/// and drops only after releasing the hold.
unsafe fn forever<'a, G: 'a, H>(held: Held<'a, G>) -> H {
    // SAFETY: `H` is `Held<'static, G'>` for the same guard type with a
    // longer lifetime (checked by the callers' annotations); the caller
    // keeps the borrowed lock alive.
    unsafe { core::mem::transmute_copy(&ManuallyDrop::new(held)) }
}

impl<T: ?Sized> RwLock<T> {
    /// A lock holding `value`, labelled with the caller's location.
    #[track_caller]
    pub fn new(value: T) -> Self
    where
        T: Sized,
    {
        Self::make(value, tokio::sync::RwLock::new(()))
    }

    /// A lock that admits at most `max_reads` readers at once.
    ///
    /// # Panics
    ///
    /// If `max_reads` exceeds tokio's limit (`u32::MAX >> 3`).
    #[track_caller]
    pub fn with_max_readers(value: T, max_reads: u32) -> Self
    where
        T: Sized,
    {
        Self::make(value, tokio::sync::RwLock::with_max_readers((), max_reads))
    }

    /// [`new`](Self::new) in a `const` context.
    #[track_caller]
    pub const fn const_new(value: T) -> Self
    where
        T: Sized,
    {
        Self::make(value, tokio::sync::RwLock::const_new(()))
    }

    /// [`with_max_readers`](Self::with_max_readers) in a `const` context.
    #[track_caller]
    pub const fn const_with_max_readers(value: T, max_reads: u32) -> Self
    where
        T: Sized,
    {
        Self::make(
            value,
            tokio::sync::RwLock::const_with_max_readers((), max_reads),
        )
    }

    #[track_caller]
    const fn make(value: T, lock: tokio::sync::RwLock<()>) -> Self
    where
        T: Sized,
    {
        RwLock {
            queue: WaitQueue::new(Location::caller()),
            lock,
            data: UnsafeCell::new(value),
        }
    }

    fn read_guard<'a>(&'a self, guard: TokioRead<'a>) -> RwLockReadGuard<'a, T> {
        RwLockReadGuard {
            held: Held::new(guard, &self.queue),
            data: self.data.get(),
            _marker: PhantomData,
        }
    }

    fn write_guard<'a>(&'a self, guard: TokioWrite<'a>) -> RwLockWriteGuard<'a, T> {
        RwLockWriteGuard {
            held: Held::new(guard, &self.queue),
            lock: self,
        }
    }

    /// Waits for shared access.
    pub fn read(&self) -> impl Future<Output = RwLockReadGuard<'_, T>> {
        recorded!(
            Read,
            self.lock.read(),
            EventKind::AsyncRwLockRead,
            self.queue.site(),
            Some(&self.queue),
            move |guard| self.read_guard(guard),
        )
    }

    /// Shared access from synchronous code, blocking the thread.
    ///
    /// # Panics
    ///
    /// As tokio's, when it has to wait inside an asynchronous context.
    pub fn blocking_read(&self) -> RwLockReadGuard<'_, T> {
        let guard = match self.lock.try_read() {
            Ok(guard) => {
                assert_may_block();
                guard
            }
            Err(_) => {
                let guard = blocking_slow(
                    EventKind::AsyncRwLockRead,
                    self.queue.site(),
                    Some(&self.queue),
                    || self.lock.blocking_read(),
                );
                keep_frame();
                guard
            }
        };
        self.read_guard(guard)
    }

    /// [`read`](Self::read) on an `Arc`'d lock: an owned guard.
    pub fn read_owned(self: Arc<Self>) -> impl Future<Output = OwnedRwLockReadGuard<T>> {
        // SAFETY: the future keeps `self` (in its map, dropped after tokio's
        // future, which borrows the lock) and moves it into the owned guard,
        // which keeps it as long as the hold taken through `this`.
        let this = unsafe { &*Arc::as_ptr(&self) };
        recorded!(
            ReadOwned,
            this.lock.read(),
            EventKind::AsyncRwLockRead,
            this.queue.site(),
            Some(&this.queue),
            once: move |guard| {
                // Through `self`, not `this`: the future's type names no
                // borrow of the lock (`T` need not be `'static`).
                // SAFETY: as above.
                let this = unsafe { &*Arc::as_ptr(&self) };
                RwLockReadGuard::owned(this.read_guard(guard), self)
            },
        )
    }

    /// Shared access if no writer holds or waits for the lock.
    ///
    /// # Errors
    ///
    /// [`TryLockError`] otherwise.
    pub fn try_read(&self) -> Result<RwLockReadGuard<'_, T>, TryLockError> {
        Ok(self.read_guard(self.lock.try_read()?))
    }

    /// [`try_read`](Self::try_read) on an `Arc`'d lock.
    ///
    /// # Errors
    ///
    /// [`TryLockError`] if a writer holds or waits for the lock.
    pub fn try_read_owned(self: Arc<Self>) -> Result<OwnedRwLockReadGuard<T>, TryLockError> {
        // SAFETY: the owned guard keeps `self` as long as the hold taken
        // through `this`.
        let this = unsafe { &*Arc::as_ptr(&self) };
        Ok(RwLockReadGuard::owned(this.try_read()?, self))
    }

    /// Waits for exclusive access.
    pub fn write(&self) -> impl Future<Output = RwLockWriteGuard<'_, T>> {
        recorded!(
            Write,
            self.lock.write(),
            EventKind::AsyncRwLockWrite,
            self.queue.site(),
            Some(&self.queue),
            move |guard| self.write_guard(guard),
        )
    }

    /// Exclusive access from synchronous code, blocking the thread.
    ///
    /// # Panics
    ///
    /// As tokio's, when it has to wait inside an asynchronous context.
    pub fn blocking_write(&self) -> RwLockWriteGuard<'_, T> {
        let guard = match self.lock.try_write() {
            Ok(guard) => {
                assert_may_block();
                guard
            }
            Err(_) => {
                let guard = blocking_slow(
                    EventKind::AsyncRwLockWrite,
                    self.queue.site(),
                    Some(&self.queue),
                    || self.lock.blocking_write(),
                );
                keep_frame();
                guard
            }
        };
        self.write_guard(guard)
    }

    /// [`write`](Self::write) on an `Arc`'d lock: an owned guard.
    pub fn write_owned(self: Arc<Self>) -> impl Future<Output = OwnedRwLockWriteGuard<T>> {
        // SAFETY: as in `read_owned`.
        let this = unsafe { &*Arc::as_ptr(&self) };
        recorded!(
            WriteOwned,
            this.lock.write(),
            EventKind::AsyncRwLockWrite,
            this.queue.site(),
            Some(&this.queue),
            once: move |guard| {
                // Through `self`, not `this`: the future's type names no
                // borrow of the lock (`T` need not be `'static`).
                // SAFETY: as above.
                let this = unsafe { &*Arc::as_ptr(&self) };
                RwLockWriteGuard::owned(this.write_guard(guard), self)
            },
        )
    }

    /// Exclusive access if the lock is free.
    ///
    /// # Errors
    ///
    /// [`TryLockError`] otherwise.
    pub fn try_write(&self) -> Result<RwLockWriteGuard<'_, T>, TryLockError> {
        Ok(self.write_guard(self.lock.try_write()?))
    }

    /// [`try_write`](Self::try_write) on an `Arc`'d lock.
    ///
    /// # Errors
    ///
    /// [`TryLockError`] if the lock is held.
    pub fn try_write_owned(self: Arc<Self>) -> Result<OwnedRwLockWriteGuard<T>, TryLockError> {
        // SAFETY: as in `try_read_owned`.
        let this = unsafe { &*Arc::as_ptr(&self) };
        Ok(RwLockWriteGuard::owned(this.try_write()?, self))
    }

    /// The data, through an exclusive borrow (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// Consumes the lock, returning the data.
    pub fn into_inner(self) -> T
    where
        T: Sized,
    {
        self.data.into_inner()
    }
}

impl<T> From<T> for RwLock<T> {
    #[track_caller]
    fn from(s: T) -> Self {
        Self::new(s)
    }
}

impl<T: Default> Default for RwLock<T> {
    #[track_caller]
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RwLock");
        match self.try_read() {
            Ok(inner) => d.field("data", &&*inner),
            Err(_) => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}

/// `Drop` (release, charging the mutex profile when tasks wait), `Deref`,
/// `Debug` and `Display` for a guard.
macro_rules! guard_impls {
    ([$($gen:tt)*] $guard:ty => $target:ty, |$g:ident| $data:expr) => {
        impl<$($gen)*> Drop for $guard {
            #[inline]
            fn drop(&mut self) {
                super::wait::release_held!(self.held);
            }
        }

        impl<$($gen)*> Deref for $guard {
            type Target = $target;
            fn deref(&self) -> &$target {
                let $g = self;
                // SAFETY: the guard holds the lock (shared or exclusive) over
                // the data the pointer points into.
                unsafe { &*$data }
            }
        }

        impl<$($gen)*> fmt::Debug for $guard
        where
            $target: fmt::Debug,
        {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&**self, f)
            }
        }

        impl<$($gen)*> fmt::Display for $guard
        where
            $target: fmt::Display,
        {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&**self, f)
            }
        }
    };
}

/// `DerefMut` for a write guard.
macro_rules! deref_mut {
    ([$($gen:tt)*] $guard:ty => $target:ty, |$g:ident| $data:expr) => {
        impl<$($gen)*> DerefMut for $guard {
            fn deref_mut(&mut self) -> &mut $target {
                let $g = self;
                // SAFETY: the guard holds the lock exclusively.
                unsafe { &mut *$data }
            }
        }
    };
}

guard_impls!(['a, T: ?Sized] RwLockReadGuard<'a, T> => T, |g| g.data);
guard_impls!(['a, T: ?Sized] RwLockWriteGuard<'a, T> => T, |g| g.lock.data.get());
guard_impls!(['a, T: ?Sized] RwLockMappedWriteGuard<'a, T> => T, |g| g.data);
guard_impls!([T: ?Sized, U: ?Sized] OwnedRwLockReadGuard<T, U> => U, |g| g.data);
guard_impls!([T: ?Sized] OwnedRwLockWriteGuard<T> => T, |g| g.lock.data.get());
guard_impls!([T: ?Sized, U: ?Sized] OwnedRwLockMappedWriteGuard<T, U> => U, |g| g.data);
deref_mut!(['a, T: ?Sized] RwLockWriteGuard<'a, T> => T, |g| g.lock.data.get());
deref_mut!(['a, T: ?Sized] RwLockMappedWriteGuard<'a, T> => T, |g| g.data);
deref_mut!([T: ?Sized] OwnedRwLockWriteGuard<T> => T, |g| g.lock.data.get());
deref_mut!([T: ?Sized, U: ?Sized] OwnedRwLockMappedWriteGuard<T, U> => U, |g| g.data);
