//! [`Semaphore`]: `tokio::sync::Semaphore` with both profiles.

use core::fmt;
use core::future::Future;
use core::mem::ManuallyDrop;
use core::panic::Location;
use core::ptr;
use std::sync::Arc;

use super::wait::{Held, WaitQueue, assert_may_block, blocking_slow, recorded, release_queued};
use super::{AcquireError, TryAcquireError};
use crate::profile::{EventKind, keep_frame};

type TokioPermit<'a> = tokio::sync::SemaphorePermit<'a>;

/// A counting semaphore: a drop-in replacement for
/// [`tokio::sync::Semaphore`] that records contention.
///
/// Same API and semantics as tokio's (fair, FIFO, `acquire_many` waits its
/// turn), which does the work. It records:
///
/// - **Block profile**: an `acquire*().await` that returns `Pending` at least
///   once, kind `semaphore`, on the waiting task's stack (its `async fn`
///   frames), labelled `cancelled=true` if the future was dropped waiting.
/// - **Mutex profile**: a permit drop (or [`add_permits`](Self::add_permits))
///   while tasks wait is charged, on the releasing stack, with the waiting
///   it caused since the previous charge (Go >= 1.22's rule): so a pool's
///   holders are blamed for the time others queued for a slot.
/// - [`new`](Self::new) is `#[track_caller]`: the `lock` label.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use syncprof::tokio::Semaphore;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let pool = Arc::new(Semaphore::new(2));
/// let permit = pool.acquire().await.unwrap();
/// assert_eq!(pool.available_permits(), 1);
/// drop(permit);
/// # });
/// ```
pub struct Semaphore {
    queue: WaitQueue,
    inner: tokio::sync::Semaphore,
}

/// A permit from a [`Semaphore`], returned on drop (a drop while tasks wait is
/// charged to the mutex profile).
#[must_use]
#[clippy::has_significant_drop]
pub struct SemaphorePermit<'a> {
    held: Held<'a, TokioPermit<'a>>,
    sem: &'a Semaphore,
}

/// An owned permit from an `Arc`'d [`Semaphore`].
#[must_use]
#[clippy::has_significant_drop]
pub struct OwnedSemaphorePermit {
    // Borrows from the semaphore `sem` keeps alive; released in `drop`.
    held: Held<'static, TokioPermit<'static>>,
    sem: Arc<Semaphore>,
}

impl Semaphore {
    /// The most permits a semaphore can hold (tokio's).
    pub const MAX_PERMITS: usize = tokio::sync::Semaphore::MAX_PERMITS;

    /// A semaphore with `permits` permits, labelled with the caller's
    /// location.
    ///
    /// # Panics
    ///
    /// If `permits` exceeds [`MAX_PERMITS`](Self::MAX_PERMITS).
    #[track_caller]
    pub fn new(permits: usize) -> Self {
        Semaphore {
            queue: WaitQueue::new(Location::caller()),
            inner: tokio::sync::Semaphore::new(permits),
        }
    }

    /// [`new`](Self::new) in a `const` context.
    #[track_caller]
    pub const fn const_new(permits: usize) -> Self {
        Semaphore {
            queue: WaitQueue::new(Location::caller()),
            inner: tokio::sync::Semaphore::const_new(permits),
        }
    }

    #[inline(always)]
    fn held<'a>(&'a self, permit: TokioPermit<'a>) -> SemaphorePermit<'a> {
        SemaphorePermit {
            held: Held::new(permit, &self.queue),
            sem: self,
        }
    }

    /// An owned permit from a borrowed one of `this` (taken through
    /// [`unarc`], not a borrow of `this`, so that the `Arc` moves into the
    /// owned permit instead of being cloned).
    #[inline]
    fn owned(this: Arc<Self>, permit: SemaphorePermit<'_>) -> OwnedSemaphorePermit {
        let permit = ManuallyDrop::new(permit);
        // SAFETY: `permit` is never dropped: its hold moves out once.
        let held = unsafe { ptr::read(&permit.held) };
        // SAFETY: the hold borrows from the semaphore in the `Arc` that the
        // owned permit keeps and drops only after releasing the hold; only
        // the lifetime changes.
        let held = unsafe {
            core::mem::transmute::<Held<'_, TokioPermit<'_>>, Held<'static, TokioPermit<'static>>>(
                held,
            )
        };
        OwnedSemaphorePermit { held, sem: this }
    }

    /// The number of permits available now.
    pub fn available_permits(&self) -> usize {
        self.inner.available_permits()
    }

    /// Adds `n` permits; with tasks waiting, the permits let them in and this
    /// call is charged to the mutex profile like a permit drop.
    ///
    /// # Panics
    ///
    /// If the total would exceed [`MAX_PERMITS`](Self::MAX_PERMITS).
    pub fn add_permits(&self, n: usize) {
        if self.queue.has_waiters() {
            release_queued(
                &self.queue,
                || self.inner.add_permits(n),
                EventKind::Semaphore,
            );
            keep_frame();
        } else {
            self.inner.add_permits(n);
        }
    }

    /// Takes up to `n` available permits away for good; returns how many.
    pub fn forget_permits(&self, n: usize) -> usize {
        self.inner.forget_permits(n)
    }

    /// Waits for a permit.
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed.
    pub fn acquire(&self) -> impl Future<Output = Result<SemaphorePermit<'_>, AcquireError>> {
        recorded!(
            Acquire,
            self.inner.acquire(),
            EventKind::Semaphore,
            self.queue.site(),
            Some(&self.queue),
            move |permit| Ok(self.held(permit?)),
        )
    }

    /// Waits for `n` permits at once.
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed.
    pub fn acquire_many(
        &self,
        n: u32,
    ) -> impl Future<Output = Result<SemaphorePermit<'_>, AcquireError>> {
        recorded!(
            AcquireMany,
            self.inner.acquire_many(n),
            EventKind::Semaphore,
            self.queue.site(),
            Some(&self.queue),
            move |permit| Ok(self.held(permit?)),
        )
    }

    /// Takes a permit if one is available.
    ///
    /// # Errors
    ///
    /// [`TryAcquireError`]: closed, or no permits.
    pub fn try_acquire(&self) -> Result<SemaphorePermit<'_>, TryAcquireError> {
        Ok(self.held(self.inner.try_acquire()?))
    }

    /// Takes `n` permits if available.
    ///
    /// # Errors
    ///
    /// [`TryAcquireError`]: closed, or not enough permits.
    pub fn try_acquire_many(&self, n: u32) -> Result<SemaphorePermit<'_>, TryAcquireError> {
        Ok(self.held(self.inner.try_acquire_many(n)?))
    }

    /// Waits for a permit from synchronous code, blocking the thread.
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed.
    ///
    /// # Panics
    ///
    /// As tokio's, when it has to wait inside an asynchronous context.
    pub fn blocking_acquire(&self) -> Result<SemaphorePermit<'_>, AcquireError> {
        self.blocking_acquire_many(1)
    }

    /// Waits for `n` permits from synchronous code, blocking the thread.
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed.
    ///
    /// # Panics
    ///
    /// As tokio's, when it has to wait inside an asynchronous context.
    pub fn blocking_acquire_many(&self, n: u32) -> Result<SemaphorePermit<'_>, AcquireError> {
        let permit = match self.inner.try_acquire_many(n) {
            Ok(permit) => {
                assert_may_block();
                permit
            }
            Err(_) => {
                let permit = blocking_slow(
                    EventKind::Semaphore,
                    self.queue.site(),
                    Some(&self.queue),
                    || self.inner.blocking_acquire_many(n),
                );
                keep_frame();
                permit?
            }
        };
        Ok(self.held(permit))
    }

    /// [`acquire`](Self::acquire) on an `Arc`'d semaphore: an owned permit.
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed.
    pub fn acquire_owned(
        self: Arc<Self>,
    ) -> impl Future<Output = Result<OwnedSemaphorePermit, AcquireError>> {
        // SAFETY: see `unarc`: the future keeps `self` (in `map`, dropped
        // after tokio's future) and moves it into the owned permit.
        let this = unsafe { unarc(&self) };
        recorded!(
            AcquireOwned,
            this.inner.acquire(),
            EventKind::Semaphore,
            this.queue.site(),
            Some(&this.queue),
            once: move |permit| Ok(Self::owned(self, this.held(permit?))),
        )
    }

    /// [`acquire_many`](Self::acquire_many) on an `Arc`'d semaphore.
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed.
    pub fn acquire_many_owned(
        self: Arc<Self>,
        n: u32,
    ) -> impl Future<Output = Result<OwnedSemaphorePermit, AcquireError>> {
        // SAFETY: as in `acquire_owned`.
        let this = unsafe { unarc(&self) };
        recorded!(
            AcquireManyOwned,
            this.inner.acquire_many(n),
            EventKind::Semaphore,
            this.queue.site(),
            Some(&this.queue),
            once: move |permit| Ok(Self::owned(self, this.held(permit?))),
        )
    }

    /// [`try_acquire`](Self::try_acquire) on an `Arc`'d semaphore.
    ///
    /// # Errors
    ///
    /// [`TryAcquireError`]: closed, or no permits.
    pub fn try_acquire_owned(self: Arc<Self>) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        // SAFETY: see `unarc`.
        let permit = unsafe { unarc(&self) }.try_acquire()?;
        Ok(Self::owned(self, permit))
    }

    /// [`try_acquire_many`](Self::try_acquire_many) on an `Arc`'d semaphore.
    ///
    /// # Errors
    ///
    /// [`TryAcquireError`]: closed, or not enough permits.
    pub fn try_acquire_many_owned(
        self: Arc<Self>,
        n: u32,
    ) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        // SAFETY: see `unarc`.
        let permit = unsafe { unarc(&self) }.try_acquire_many(n)?;
        Ok(Self::owned(self, permit))
    }

    /// [`blocking_acquire`](Self::blocking_acquire) on an `Arc`'d semaphore.
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed.
    ///
    /// # Panics
    ///
    /// As [`blocking_acquire`](Self::blocking_acquire).
    pub fn blocking_acquire_owned(self: Arc<Self>) -> Result<OwnedSemaphorePermit, AcquireError> {
        // SAFETY: see `unarc`.
        let permit = unsafe { unarc(&self) }.blocking_acquire()?;
        Ok(Self::owned(self, permit))
    }

    /// [`blocking_acquire_many`](Self::blocking_acquire_many) on an `Arc`'d
    /// semaphore.
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed.
    ///
    /// # Panics
    ///
    /// As [`blocking_acquire`](Self::blocking_acquire).
    pub fn blocking_acquire_many_owned(
        self: Arc<Self>,
        n: u32,
    ) -> Result<OwnedSemaphorePermit, AcquireError> {
        // SAFETY: see `unarc`.
        let permit = unsafe { unarc(&self) }.blocking_acquire_many(n)?;
        Ok(Self::owned(self, permit))
    }

    /// Closes the semaphore: pending and later acquires fail.
    pub fn close(&self) {
        // The waiters it fails end their waits here.
        self.queue.letting_in();
        self.inner.close();
    }

    /// Whether the semaphore is closed.
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}

/// The semaphore in `arc`, borrowed for as long as the caller says.
///
/// # Safety
///
/// The reference, and every hold taken through it, must not outlive `arc`
/// or the owned permit the `Arc` then moves into (which releases its hold
/// before it drops the `Arc`). A caller's `Arc` keeps the semaphore in place
/// while it runs, including across the `.await` of an owned acquire (a
/// future dropped there drops its tokio future, which borrows the semaphore,
/// before its `Arc`: locals before parameters).
#[inline(always)]
unsafe fn unarc<'a>(arc: &Arc<Semaphore>) -> &'a Semaphore {
    // SAFETY: the pointer is valid while `arc` lives; the caller bounds the
    // lifetime.
    unsafe { &*Arc::as_ptr(arc) }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("ll_sem", &self.inner)
            .finish()
    }
}

impl<'a> SemaphorePermit<'a> {
    fn into_inner(self) -> TokioPermit<'a> {
        let this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped: the hold moves out once.
        unsafe { ptr::read(&this.held) }.into_guard()
    }

    /// Keeps the permits out of the semaphore for good.
    pub fn forget(self) {
        self.into_inner().forget();
    }

    /// Merges `other`'s permits into this one.
    ///
    /// # Panics
    ///
    /// If the permits come from different semaphores.
    pub fn merge(&mut self, other: Self) {
        let other = other.into_inner();
        self.held.guard_mut().merge(other);
    }

    /// Splits `n` permits off into a new permit; `None` if this one has fewer.
    pub fn split(&mut self, n: usize) -> Option<Self> {
        let split = self.held.guard_mut().split(n)?;
        Some(self.sem.held(split))
    }

    /// The semaphore the permits came from.
    pub fn semaphore(&self) -> &Semaphore {
        self.sem
    }

    /// The number of permits held.
    pub fn num_permits(&self) -> usize {
        self.held.guard().num_permits()
    }
}

impl Drop for SemaphorePermit<'_> {
    #[inline]
    fn drop(&mut self) {
        super::wait::release_held!(self.held);
    }
}

impl fmt::Debug for SemaphorePermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphorePermit")
            .field("sem", &self.sem)
            .field("permits", &self.num_permits())
            .finish()
    }
}

impl OwnedSemaphorePermit {
    fn into_parts(self) -> (TokioPermit<'static>, Arc<Semaphore>) {
        let this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped: each field moves out once.
        let (held, sem) = unsafe { (ptr::read(&this.held), ptr::read(&this.sem)) };
        (held.into_guard(), sem)
    }

    /// Keeps the permits out of the semaphore for good.
    pub fn forget(self) {
        let (permit, sem) = self.into_parts();
        permit.forget();
        drop(sem);
    }

    /// Merges `other`'s permits into this one.
    ///
    /// # Panics
    ///
    /// If the permits come from different semaphores.
    pub fn merge(&mut self, other: Self) {
        let (permit, sem) = other.into_parts();
        self.held.guard_mut().merge(permit);
        drop(sem);
    }

    /// Splits `n` permits off into a new permit; `None` if this one has fewer.
    pub fn split(&mut self, n: usize) -> Option<Self> {
        let split = self.held.guard_mut().split(n)?;
        let queue = self.held.queue();
        Some(OwnedSemaphorePermit {
            held: Held::new(split, queue),
            sem: Arc::clone(&self.sem),
        })
    }

    /// The semaphore the permits came from.
    pub fn semaphore(&self) -> &Arc<Semaphore> {
        &self.sem
    }

    /// The number of permits held.
    pub fn num_permits(&self) -> usize {
        self.held.guard().num_permits()
    }
}

impl Drop for OwnedSemaphorePermit {
    #[inline]
    fn drop(&mut self) {
        super::wait::release_held!(self.held);
    }
}

impl fmt::Debug for OwnedSemaphorePermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedSemaphorePermit")
            .field("sem", &self.sem)
            .field("permits", &self.num_permits())
            .finish()
    }
}
