//! [`Mutex`]: `tokio::sync::Mutex`'s API over a `tokio::sync::Mutex<()>`
//! (tokio's fair FIFO semaphore does the locking) and the data cell, with
//! both profiles.

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

type TokioGuard<'a> = tokio::sync::MutexGuard<'a, ()>;

/// An asynchronous mutex: a drop-in replacement for [`tokio::sync::Mutex`]
/// that records contention.
///
/// Same API, semantics (fair, FIFO; a guard may be held across `.await`; the
/// guard is `Send`) and trait impls as tokio's; tokio's own mutex does the
/// locking. What it adds:
///
/// - **Block profile**: a [`lock`](Self::lock) that returns `Pending` at
///   least once is one event (kind `async_mutex`), on the stack of the task
///   captured at its first `Pending` poll (so the caller's `async fn` frames,
///   named `…::{{closure}}`, are on it), with the wall time from that poll to
///   the `Ready` one. A `lock()` future dropped while waiting (a timeout, a
///   `select!`) records the time it waited with the label `cancelled=true`.
/// - **Mutex profile**: a guard drop that lets queued tasks in charges the
///   dropping task's stack with the delay its critical section caused: the
///   head's wait plus the mean of the head's and the newest waiter's waits for
///   every other waiter (Go >= 1.22's rule, each wait counted since the
///   previous charge).
/// - [`new`](Self::new) is `#[track_caller]`: its location is the `lock`
///   label of the samples.
///
/// Uncontended, `lock().await` and the guard drop cost tokio's plus one
/// relaxed load; the bookkeeping runs only when a task has to wait.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use syncprof::tokio::Mutex;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let counter = Arc::new(Mutex::new(0));
/// let tasks: Vec<_> = (0..4)
///     .map(|_| {
///         let counter = Arc::clone(&counter);
///         tokio::spawn(async move { *counter.lock().await += 1 })
///     })
///     .collect();
/// for task in tasks {
///     task.await.unwrap();
/// }
/// assert_eq!(*counter.lock().await, 4);
/// # });
/// ```
pub struct Mutex<T: ?Sized> {
    queue: WaitQueue,
    lock: tokio::sync::Mutex<()>,
    data: UnsafeCell<T>,
}

// SAFETY: the mutex hands out `&mut T` to one holder at a time, which may be
// on any thread: `T: Send` suffices (as tokio's).
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}

/// A handle to a held [`Mutex`], returned by [`Mutex::lock`] and
/// [`Mutex::try_lock`]. The lock is released when it is dropped; a drop that
/// lets queued tasks in is charged to the mutex profile on the dropping
/// stack.
#[must_use = "if unused the Mutex will immediately unlock"]
#[clippy::has_significant_drop]
pub struct MutexGuard<'a, T: ?Sized> {
    held: Held<'a, TokioGuard<'a>>,
    lock: &'a Mutex<T>,
}

// SAFETY: a shared guard gives `&T` only (as tokio's bound).
unsafe impl<T: ?Sized + Send + Sync> Sync for MutexGuard<'_, T> {}

/// An owned handle to a held [`Mutex`], returned by [`Mutex::lock_owned`] and
/// [`Mutex::try_lock_owned`]: keeps the `Arc` alive; `'static` when `T` is.
#[must_use = "if unused the Mutex will immediately unlock"]
#[clippy::has_significant_drop]
pub struct OwnedMutexGuard<T: ?Sized> {
    // Declared before `lock`: it borrows from the mutex that `lock` keeps
    // alive (released in `drop`, before any field is dropped).
    held: Held<'static, TokioGuard<'static>>,
    lock: Arc<Mutex<T>>,
}

// SAFETY: as for `MutexGuard`.
unsafe impl<T: ?Sized + Send + Sync> Sync for OwnedMutexGuard<T> {}

/// A guard for a component of the data of a held [`Mutex`], made by
/// [`MutexGuard::map`]. Cannot be mapped back or used with a condition
/// variable, as tokio's.
#[must_use = "if unused the Mutex will immediately unlock"]
#[clippy::has_significant_drop]
pub struct MappedMutexGuard<'a, T: ?Sized> {
    held: Held<'a, TokioGuard<'a>>,
    data: *mut T,
    _marker: PhantomData<&'a mut T>,
}

// SAFETY: the guard gives `&T` / `&mut T` to its holder only (tokio's bounds).
unsafe impl<'a, T: ?Sized + Sync + 'a> Sync for MappedMutexGuard<'a, T> {}
// SAFETY: as above: sending the guard sends the `&mut T` it stands for.
unsafe impl<'a, T: ?Sized + Send + 'a> Send for MappedMutexGuard<'a, T> {}

/// An owned guard for a component `U` of the data `T` of a held [`Mutex`],
/// made by [`OwnedMutexGuard::map`].
#[must_use = "if unused the Mutex will immediately unlock"]
#[clippy::has_significant_drop]
pub struct OwnedMappedMutexGuard<T: ?Sized, U: ?Sized = T> {
    held: Held<'static, TokioGuard<'static>>,
    data: *mut U,
    lock: Arc<Mutex<T>>,
}

// SAFETY: tokio's bounds: the guard stands for `&mut U` and keeps `Arc<Mutex<T>>`.
unsafe impl<T: ?Sized + Send + Sync, U: ?Sized + Send + Sync> Sync for OwnedMappedMutexGuard<T, U> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send, U: ?Sized + Send> Send for OwnedMappedMutexGuard<T, U> {}

impl<T: ?Sized> Mutex<T> {
    /// Creates an unlocked mutex holding `t`, labelled with the caller's
    /// location.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = syncprof::tokio::Mutex::new(5);
    /// ```
    #[track_caller]
    pub fn new(t: T) -> Self
    where
        T: Sized,
    {
        Self::const_new(t)
    }

    /// Creates an unlocked mutex in a `const` context (a `static`), labelled
    /// with the caller's location.
    ///
    /// # Examples
    ///
    /// ```
    /// use syncprof::tokio::Mutex;
    /// static LOCK: Mutex<i32> = Mutex::const_new(5);
    /// ```
    #[track_caller]
    pub const fn const_new(t: T) -> Self
    where
        T: Sized,
    {
        Mutex {
            queue: WaitQueue::new(Location::caller()),
            lock: tokio::sync::Mutex::const_new(()),
            data: UnsafeCell::new(t),
        }
    }

    #[inline(always)]
    fn held<'a>(&'a self, guard: TokioGuard<'a>) -> Held<'a, TokioGuard<'a>> {
        Held::new(guard, &self.queue)
    }

    /// Locks the mutex, waiting (asynchronously) in FIFO order for it.
    /// Cancel safe: a `lock()` dropped while waiting gives up its place.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let mutex = syncprof::tokio::Mutex::new(1);
    /// let mut n = mutex.lock().await;
    /// *n = 2;
    /// # });
    /// ```
    pub fn lock(&self) -> impl Future<Output = MutexGuard<'_, T>> {
        recorded!(
            Lock,
            self.lock.lock(),
            EventKind::AsyncMutex,
            self.queue.site(),
            Some(&self.queue),
            move |guard| MutexGuard {
                held: self.held(guard),
                lock: self,
            },
        )
    }

    /// Locks the mutex from synchronous code, blocking the thread; a wait is
    /// recorded like a `std` mutex's (labelled `blocking_in_async=true` on a
    /// runtime worker).
    ///
    /// # Panics
    ///
    /// As tokio's, when it has to wait inside an asynchronous execution
    /// context (tokio's check; a free lock is taken at once).
    ///
    /// # Examples
    ///
    /// ```
    /// let mutex = syncprof::tokio::Mutex::new(1);
    /// *mutex.blocking_lock() += 1;
    /// ```
    #[track_caller]
    pub fn blocking_lock(&self) -> MutexGuard<'_, T> {
        let guard = match self.lock.try_lock() {
            Ok(guard) => {
                assert_may_block();
                guard
            }
            Err(_) => {
                let guard = blocking_slow(
                    EventKind::AsyncMutex,
                    self.queue.site(),
                    Some(&self.queue),
                    || self.lock.blocking_lock(),
                );
                keep_frame();
                guard
            }
        };
        MutexGuard {
            held: self.held(guard),
            lock: self,
        }
    }

    /// [`blocking_lock`](Self::blocking_lock) for an `Arc`'d mutex, returning
    /// an owned guard.
    ///
    /// # Panics
    ///
    /// As [`blocking_lock`](Self::blocking_lock).
    #[track_caller]
    pub fn blocking_lock_owned(self: Arc<Self>) -> OwnedMutexGuard<T> {
        // SAFETY: the owned guard keeps `self`, and so the mutex, as long
        // as the hold taken through `this`.
        let this = unsafe { &*Arc::as_ptr(&self) };
        let guard = ManuallyDrop::new(this.blocking_lock());
        // SAFETY: `guard` is forgotten, so its `Held` is moved out exactly
        // once, unreleased.
        let held = unsafe { ptr::read(&guard.held) };
        // SAFETY: `held` holds `self`'s lock.
        unsafe { Self::owned(self, held) }
    }

    /// An owned guard from a hold on `this`.
    ///
    /// # Safety
    ///
    /// `held` holds `this`'s lock.
    unsafe fn owned(this: Arc<Self>, held: Held<'_, TokioGuard<'_>>) -> OwnedMutexGuard<T> {
        // SAFETY: the guard and queue reference borrow from the mutex inside
        // the `Arc` that the owned guard keeps alive and releases only after
        // the guard (in `drop`); only the lifetime changes.
        let held = unsafe {
            core::mem::transmute::<Held<'_, TokioGuard<'_>>, Held<'static, TokioGuard<'static>>>(
                held,
            )
        };
        OwnedMutexGuard { held, lock: this }
    }

    /// Locks an `Arc`'d mutex, returning an owned guard (`'static` when `T`
    /// is), for holding the lock beyond a borrow.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let mutex = Arc::new(syncprof::tokio::Mutex::new(1));
    /// let mut n = mutex.clone().lock_owned().await;
    /// *n = 2;
    /// # });
    /// ```
    pub fn lock_owned(self: Arc<Self>) -> impl Future<Output = OwnedMutexGuard<T>> {
        // SAFETY: the future keeps `self` (in its map, dropped after tokio's
        // future, which borrows the mutex) and moves it into the owned
        // guard, which keeps it as long as the hold taken through `this`.
        let this = unsafe { &*Arc::as_ptr(&self) };
        recorded!(
            LockOwned,
            this.lock.lock(),
            EventKind::AsyncMutex,
            this.queue.site(),
            Some(&this.queue),
            once: move |guard| {
                // Through `self`, not `this`: the future's type names no
                // borrow of the mutex (`T` need not be `'static`).
                // SAFETY: as above.
                let this = unsafe { &*Arc::as_ptr(&self) };
                let held = this.held(guard);
                // SAFETY: the hold is on `self`'s lock.
                unsafe { Self::owned(self, held) }
            },
        )
    }

    /// Takes the lock if it is free.
    ///
    /// # Errors
    ///
    /// [`TryLockError`] when the lock is held.
    pub fn try_lock(&self) -> Result<MutexGuard<'_, T>, TryLockError> {
        let guard = self.lock.try_lock()?;
        Ok(MutexGuard {
            held: self.held(guard),
            lock: self,
        })
    }

    /// [`try_lock`](Self::try_lock) for an `Arc`'d mutex, returning an owned
    /// guard.
    ///
    /// # Errors
    ///
    /// [`TryLockError`] when the lock is held.
    pub fn try_lock_owned(self: Arc<Self>) -> Result<OwnedMutexGuard<T>, TryLockError> {
        // SAFETY: as in `blocking_lock_owned`.
        let this = unsafe { &*Arc::as_ptr(&self) };
        let held = this.held(this.lock.try_lock()?);
        // SAFETY: `held` holds `self`'s lock.
        Ok(unsafe { Self::owned(self, held) })
    }

    /// The data, through an exclusive borrow (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// Consumes the mutex, returning the data.
    pub fn into_inner(self) -> T
    where
        T: Sized,
    {
        self.data.into_inner()
    }
}

impl<T> From<T> for Mutex<T> {
    #[track_caller]
    fn from(s: T) -> Self {
        Self::new(s)
    }
}

impl<T: Default> Default for Mutex<T> {
    #[track_caller]
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.try_lock() {
            Ok(inner) => d.field("data", &&*inner),
            Err(_) => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    /// Splits the guard into its hold and the mutex, without releasing.
    fn into_parts(this: Self) -> (Held<'a, TokioGuard<'a>>, &'a Mutex<T>) {
        let this = ManuallyDrop::new(this);
        // SAFETY: `this` is never dropped, so the hold is moved out once.
        (unsafe { ptr::read(&this.held) }, this.lock)
    }

    /// A guard for a component of the locked data.
    pub fn map<U: ?Sized, F>(mut this: Self, f: F) -> MappedMutexGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let data = ptr::from_mut(f(&mut *this));
        let (held, _) = Self::into_parts(this);
        MappedMutexGuard {
            held,
            data,
            _marker: PhantomData,
        }
    }

    /// [`map`](Self::map) when `f` may fail: the guard comes back on `None`.
    ///
    /// # Errors
    ///
    /// The original guard, when `f` returns `None`.
    pub fn try_map<U: ?Sized, F>(mut this: Self, f: F) -> Result<MappedMutexGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let data = match f(&mut *this) {
            Some(data) => ptr::from_mut(data),
            None => return Err(this),
        };
        let (held, _) = Self::into_parts(this);
        Ok(MappedMutexGuard {
            held,
            data,
            _marker: PhantomData,
        })
    }

    /// The mutex this guard holds.
    pub fn mutex(this: &Self) -> &'a Mutex<T> {
        this.lock
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        super::wait::release_held!(self.held);
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock: no other access to the data.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock: no other access to the data.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl<T: ?Sized> OwnedMutexGuard<T> {
    fn into_parts(this: Self) -> (Held<'static, TokioGuard<'static>>, Arc<Mutex<T>>) {
        let this = ManuallyDrop::new(this);
        // SAFETY: `this` is never dropped, so each field is moved out once.
        unsafe { (ptr::read(&this.held), ptr::read(&this.lock)) }
    }

    /// An owned guard for a component of the locked data.
    pub fn map<U: ?Sized, F>(mut this: Self, f: F) -> OwnedMappedMutexGuard<T, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let data = ptr::from_mut(f(&mut *this));
        let (held, lock) = Self::into_parts(this);
        OwnedMappedMutexGuard { held, data, lock }
    }

    /// [`map`](Self::map) when `f` may fail: the guard comes back on `None`.
    ///
    /// # Errors
    ///
    /// The original guard, when `f` returns `None`.
    pub fn try_map<U: ?Sized, F>(mut this: Self, f: F) -> Result<OwnedMappedMutexGuard<T, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let data = match f(&mut *this) {
            Some(data) => ptr::from_mut(data),
            None => return Err(this),
        };
        let (held, lock) = Self::into_parts(this);
        Ok(OwnedMappedMutexGuard { held, data, lock })
    }

    /// The `Arc`'d mutex this guard holds.
    pub fn mutex(this: &Self) -> &Arc<Mutex<T>> {
        &this.lock
    }
}

impl<T: ?Sized> Drop for OwnedMutexGuard<T> {
    #[inline]
    fn drop(&mut self) {
        super::wait::release_held!(self.held);
    }
}

impl<T: ?Sized> Deref for OwnedMutexGuard<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for OwnedMutexGuard<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for OwnedMutexGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for OwnedMutexGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl<'a, T: ?Sized> MappedMutexGuard<'a, T> {
    fn into_held(this: Self) -> Held<'a, TokioGuard<'a>> {
        let this = ManuallyDrop::new(this);
        // SAFETY: `this` is never dropped, so the hold is moved out once.
        unsafe { ptr::read(&this.held) }
    }

    /// A guard for a component of this component.
    pub fn map<U: ?Sized, F>(mut this: Self, f: F) -> MappedMutexGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let data = ptr::from_mut(f(&mut *this));
        MappedMutexGuard {
            held: Self::into_held(this),
            data,
            _marker: PhantomData,
        }
    }

    /// [`map`](Self::map) when `f` may fail.
    ///
    /// # Errors
    ///
    /// The original guard, when `f` returns `None`.
    pub fn try_map<U: ?Sized, F>(mut this: Self, f: F) -> Result<MappedMutexGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let data = match f(&mut *this) {
            Some(data) => ptr::from_mut(data),
            None => return Err(this),
        };
        Ok(MappedMutexGuard {
            held: Self::into_held(this),
            data,
            _marker: PhantomData,
        })
    }
}

impl<T: ?Sized> Drop for MappedMutexGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        super::wait::release_held!(self.held);
    }
}

impl<T: ?Sized> Deref for MappedMutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: `data` points into the data the guard holds locked.
        unsafe { &*self.data }
    }
}

impl<T: ?Sized> DerefMut for MappedMutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: `data` points into the data the guard holds locked.
        unsafe { &mut *self.data }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MappedMutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MappedMutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl<T: ?Sized, U: ?Sized> OwnedMappedMutexGuard<T, U> {
    fn into_parts(this: Self) -> (Held<'static, TokioGuard<'static>>, Arc<Mutex<T>>) {
        let this = ManuallyDrop::new(this);
        // SAFETY: `this` is never dropped, so each field is moved out once.
        unsafe { (ptr::read(&this.held), ptr::read(&this.lock)) }
    }

    /// An owned guard for a component of this component.
    pub fn map<S: ?Sized, F>(mut this: Self, f: F) -> OwnedMappedMutexGuard<T, S>
    where
        F: FnOnce(&mut U) -> &mut S,
    {
        let data = ptr::from_mut(f(&mut *this));
        let (held, lock) = Self::into_parts(this);
        OwnedMappedMutexGuard { held, data, lock }
    }

    /// [`map`](Self::map) when `f` may fail.
    ///
    /// # Errors
    ///
    /// The original guard, when `f` returns `None`.
    pub fn try_map<S: ?Sized, F>(mut this: Self, f: F) -> Result<OwnedMappedMutexGuard<T, S>, Self>
    where
        F: FnOnce(&mut U) -> Option<&mut S>,
    {
        let data = match f(&mut *this) {
            Some(data) => ptr::from_mut(data),
            None => return Err(this),
        };
        let (held, lock) = Self::into_parts(this);
        Ok(OwnedMappedMutexGuard { held, data, lock })
    }

    /// The `Arc`'d mutex this guard holds.
    pub fn mutex(this: &Self) -> &Arc<Mutex<T>> {
        &this.lock
    }
}

impl<T: ?Sized, U: ?Sized> Drop for OwnedMappedMutexGuard<T, U> {
    #[inline]
    fn drop(&mut self) {
        super::wait::release_held!(self.held);
    }
}

impl<T: ?Sized, U: ?Sized> Deref for OwnedMappedMutexGuard<T, U> {
    type Target = U;
    fn deref(&self) -> &U {
        // SAFETY: `data` points into the data the guard holds locked.
        unsafe { &*self.data }
    }
}

impl<T: ?Sized, U: ?Sized> DerefMut for OwnedMappedMutexGuard<T, U> {
    fn deref_mut(&mut self) -> &mut U {
        // SAFETY: `data` points into the data the guard holds locked.
        unsafe { &mut *self.data }
    }
}

impl<T: ?Sized, U: ?Sized + fmt::Debug> fmt::Debug for OwnedMappedMutexGuard<T, U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized, U: ?Sized + fmt::Display> fmt::Display for OwnedMappedMutexGuard<T, U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}
