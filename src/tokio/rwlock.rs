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
use core::ptr;
use std::sync::Arc;

use super::TryLockError;
use super::wait::{Held, WaitQueue, assert_may_block, blocking_slow, recorded};
use crate::profile::{EventKind, keep_frame};

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

/// Moves a field out of a guard that is forgotten.
macro_rules! take {
    ($this:ident . $field:ident) => {{
        let field = &$this.$field;
        // SAFETY: `$this` is a `ManuallyDrop` that is never dropped, and each
        // field is moved out of it at most once.
        unsafe { ptr::read(field) }
    }};
}

impl<'a, T: ?Sized> RwLockReadGuard<'a, T> {
    fn owned<L: ?Sized>(this: Self, lock: Arc<RwLock<L>>) -> OwnedRwLockReadGuard<L, T> {
        let this = ManuallyDrop::new(this);
        let held = take!(this.held);
        // SAFETY: the hold borrows from `lock`'s lock, kept by the guard.
        let held: ReadHeld<'static> = unsafe { forever(held) };
        OwnedRwLockReadGuard {
            held,
            data: this.data,
            lock,
        }
    }

    /// A guard for a component of the data.
    pub fn map<F, U: ?Sized>(this: Self, f: F) -> RwLockReadGuard<'a, U>
    where
        F: FnOnce(&T) -> &U,
    {
        let data = ptr::from_ref(f(&*this));
        let this = ManuallyDrop::new(this);
        RwLockReadGuard {
            held: take!(this.held),
            data,
            _marker: PhantomData,
        }
    }

    /// [`map`](Self::map) when `f` may fail.
    ///
    /// # Errors
    ///
    /// The original guard, when `f` returns `None`.
    pub fn try_map<F, U: ?Sized>(this: Self, f: F) -> Result<RwLockReadGuard<'a, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let Some(data) = f(&*this).map(ptr::from_ref) else {
            return Err(this);
        };
        let this = ManuallyDrop::new(this);
        Ok(RwLockReadGuard {
            held: take!(this.held),
            data,
            _marker: PhantomData,
        })
    }
}

impl<'a, T: ?Sized> RwLockWriteGuard<'a, T> {
    fn owned(this: Self, lock: Arc<RwLock<T>>) -> OwnedRwLockWriteGuard<T> {
        let this = ManuallyDrop::new(this);
        let held = take!(this.held);
        // SAFETY: the hold borrows from `lock`'s lock, kept by the guard.
        let held: WriteHeld<'static> = unsafe { forever(held) };
        OwnedRwLockWriteGuard { held, lock }
    }

    fn into_mapped_ptr<U: ?Sized>(this: Self, data: *mut U) -> RwLockMappedWriteGuard<'a, U> {
        let this = ManuallyDrop::new(this);
        RwLockMappedWriteGuard {
            held: take!(this.held),
            data,
            _marker: PhantomData,
        }
    }

    /// A guard for a component of the data.
    pub fn map<F, U: ?Sized>(mut this: Self, f: F) -> RwLockMappedWriteGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let data = ptr::from_mut(f(&mut *this));
        Self::into_mapped_ptr(this, data)
    }

    /// [`map`](Self::map) when `f` may fail.
    ///
    /// # Errors
    ///
    /// The original guard, when `f` returns `None`.
    pub fn try_map<F, U: ?Sized>(
        mut this: Self,
        f: F,
    ) -> Result<RwLockMappedWriteGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let Some(data) = f(&mut *this).map(ptr::from_mut) else {
            return Err(this);
        };
        Ok(Self::into_mapped_ptr(this, data))
    }

    /// The guard as a mapped guard of the whole data.
    pub fn into_mapped(this: Self) -> RwLockMappedWriteGuard<'a, T> {
        let data = this.lock.data.get();
        Self::into_mapped_ptr(this, data)
    }

    /// Atomically turns exclusive access into shared access (other readers
    /// get in, no writer in between).
    pub fn downgrade(self) -> RwLockReadGuard<'a, T> {
        let lock = self.lock;
        let this = ManuallyDrop::new(self);
        let read = TokioWrite::downgrade(take!(this.held).into_guard());
        lock.read_guard(read)
    }

    /// [`downgrade`](Self::downgrade) to a component of the data.
    pub fn downgrade_map<F, U: ?Sized>(this: Self, f: F) -> RwLockReadGuard<'a, U>
    where
        F: FnOnce(&T) -> &U,
    {
        // `f` runs while the lock is still held exclusively (as tokio's).
        let data = ptr::from_ref(f(&*this));
        let read = ManuallyDrop::new(this.downgrade());
        RwLockReadGuard {
            held: take!(read.held),
            data,
            _marker: PhantomData,
        }
    }

    /// [`downgrade_map`](Self::downgrade_map) when `f` may fail.
    ///
    /// # Errors
    ///
    /// The original write guard, when `f` returns `None`.
    pub fn try_downgrade_map<F, U: ?Sized>(this: Self, f: F) -> Result<RwLockReadGuard<'a, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let Some(data) = f(&*this).map(ptr::from_ref) else {
            return Err(this);
        };
        let read = this.downgrade();
        let read = ManuallyDrop::new(read);
        Ok(RwLockReadGuard {
            held: take!(read.held),
            data,
            _marker: PhantomData,
        })
    }
}

impl<'a, T: ?Sized> RwLockMappedWriteGuard<'a, T> {
    /// A guard for a component of this component.
    pub fn map<F, U: ?Sized>(mut this: Self, f: F) -> RwLockMappedWriteGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let data = ptr::from_mut(f(&mut *this));
        let this = ManuallyDrop::new(this);
        RwLockMappedWriteGuard {
            held: take!(this.held),
            data,
            _marker: PhantomData,
        }
    }

    /// [`map`](Self::map) when `f` may fail.
    ///
    /// # Errors
    ///
    /// The original guard, when `f` returns `None`.
    pub fn try_map<F, U: ?Sized>(
        mut this: Self,
        f: F,
    ) -> Result<RwLockMappedWriteGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let Some(data) = f(&mut *this).map(ptr::from_mut) else {
            return Err(this);
        };
        let this = ManuallyDrop::new(this);
        Ok(RwLockMappedWriteGuard {
            held: take!(this.held),
            data,
            _marker: PhantomData,
        })
    }
}

impl<T: ?Sized, U: ?Sized> OwnedRwLockReadGuard<T, U> {
    /// A guard for a component of this data.
    pub fn map<F, V: ?Sized>(this: Self, f: F) -> OwnedRwLockReadGuard<T, V>
    where
        F: FnOnce(&U) -> &V,
    {
        let data = ptr::from_ref(f(&*this));
        let this = ManuallyDrop::new(this);
        OwnedRwLockReadGuard {
            held: take!(this.held),
            data,
            lock: take!(this.lock),
        }
    }

    /// [`map`](Self::map) when `f` may fail.
    ///
    /// # Errors
    ///
    /// The original guard, when `f` returns `None`.
    pub fn try_map<F, V: ?Sized>(this: Self, f: F) -> Result<OwnedRwLockReadGuard<T, V>, Self>
    where
        F: FnOnce(&U) -> Option<&V>,
    {
        let Some(data) = f(&*this).map(ptr::from_ref) else {
            return Err(this);
        };
        let this = ManuallyDrop::new(this);
        Ok(OwnedRwLockReadGuard {
            held: take!(this.held),
            data,
            lock: take!(this.lock),
        })
    }

    /// The `Arc`'d lock this guard holds.
    pub fn rwlock(this: &Self) -> &Arc<RwLock<T>> {
        &this.lock
    }
}

impl<T: ?Sized> OwnedRwLockWriteGuard<T> {
    fn into_mapped_ptr<U: ?Sized>(this: Self, data: *mut U) -> OwnedRwLockMappedWriteGuard<T, U> {
        let this = ManuallyDrop::new(this);
        OwnedRwLockMappedWriteGuard {
            held: take!(this.held),
            data,
            lock: take!(this.lock),
        }
    }

    /// A guard for a component of the data.
    pub fn map<F, U: ?Sized>(mut this: Self, f: F) -> OwnedRwLockMappedWriteGuard<T, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let data = ptr::from_mut(f(&mut *this));
        Self::into_mapped_ptr(this, data)
    }

    /// [`map`](Self::map) when `f` may fail.
    ///
    /// # Errors
    ///
    /// The original guard, when `f` returns `None`.
    pub fn try_map<F, U: ?Sized>(
        mut this: Self,
        f: F,
    ) -> Result<OwnedRwLockMappedWriteGuard<T, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let Some(data) = f(&mut *this).map(ptr::from_mut) else {
            return Err(this);
        };
        Ok(Self::into_mapped_ptr(this, data))
    }

    /// The guard as a mapped guard of the whole data.
    pub fn into_mapped(this: Self) -> OwnedRwLockMappedWriteGuard<T> {
        let data = this.lock.data.get();
        Self::into_mapped_ptr(this, data)
    }

    /// Atomically turns exclusive access into shared access.
    pub fn downgrade(self) -> OwnedRwLockReadGuard<T> {
        let this = ManuallyDrop::new(self);
        let lock: Arc<RwLock<T>> = take!(this.lock);
        let read = TokioWrite::downgrade(take!(this.held).into_guard());
        let held = Held::new(read, &lock.queue);
        // SAFETY: the hold borrows from `lock`, kept by the new guard.
        let held: ReadHeld<'static> = unsafe { forever(held) };
        OwnedRwLockReadGuard {
            held,
            data: lock.data.get(),
            lock,
        }
    }

    /// [`downgrade`](Self::downgrade) to a component of the data.
    pub fn downgrade_map<F, U: ?Sized>(this: Self, f: F) -> OwnedRwLockReadGuard<T, U>
    where
        F: FnOnce(&T) -> &U,
    {
        // `f` runs while the lock is still held exclusively (as tokio's).
        let data = ptr::from_ref(f(&*this));
        let read = ManuallyDrop::new(this.downgrade());
        OwnedRwLockReadGuard {
            held: take!(read.held),
            data,
            lock: take!(read.lock),
        }
    }

    /// [`downgrade_map`](Self::downgrade_map) when `f` may fail.
    ///
    /// # Errors
    ///
    /// The original write guard, when `f` returns `None`.
    pub fn try_downgrade_map<F, U: ?Sized>(
        this: Self,
        f: F,
    ) -> Result<OwnedRwLockReadGuard<T, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let Some(data) = f(&*this).map(ptr::from_ref) else {
            return Err(this);
        };
        let read = ManuallyDrop::new(this.downgrade());
        Ok(OwnedRwLockReadGuard {
            held: take!(read.held),
            data,
            lock: take!(read.lock),
        })
    }

    /// The `Arc`'d lock this guard holds.
    pub fn rwlock(this: &Self) -> &Arc<RwLock<T>> {
        &this.lock
    }
}

impl<T: ?Sized, U: ?Sized> OwnedRwLockMappedWriteGuard<T, U> {
    /// A guard for a component of this component.
    pub fn map<F, V: ?Sized>(mut this: Self, f: F) -> OwnedRwLockMappedWriteGuard<T, V>
    where
        F: FnOnce(&mut U) -> &mut V,
    {
        let data = ptr::from_mut(f(&mut *this));
        let this = ManuallyDrop::new(this);
        OwnedRwLockMappedWriteGuard {
            held: take!(this.held),
            data,
            lock: take!(this.lock),
        }
    }

    /// [`map`](Self::map) when `f` may fail.
    ///
    /// # Errors
    ///
    /// The original guard, when `f` returns `None`.
    pub fn try_map<F, V: ?Sized>(
        mut this: Self,
        f: F,
    ) -> Result<OwnedRwLockMappedWriteGuard<T, V>, Self>
    where
        F: FnOnce(&mut U) -> Option<&mut V>,
    {
        let Some(data) = f(&mut *this).map(ptr::from_mut) else {
            return Err(this);
        };
        let this = ManuallyDrop::new(this);
        Ok(OwnedRwLockMappedWriteGuard {
            held: take!(this.held),
            data,
            lock: take!(this.lock),
        })
    }

    /// The `Arc`'d lock this guard holds.
    pub fn rwlock(this: &Self) -> &Arc<RwLock<T>> {
        &this.lock
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
