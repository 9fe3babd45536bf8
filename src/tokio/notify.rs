//! [`Notify`]: `tokio::sync::Notify` whose waits are recorded.

use core::fmt;
use core::future::Future;
use core::mem::MaybeUninit;
use core::panic::Location;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::sync::Arc;

use super::wait::Waited;
use crate::profile::{EventKind, LockSite};

/// Notifies a single task, or all waiting tasks: a drop-in replacement for
/// [`tokio::sync::Notify`] (tokio's does the work).
///
/// A [`notified`](Self::notified)`.await` (or
/// [`notified_owned`](Self::notified_owned)`.await`) that returns `Pending`
/// is one block-profile event (kind `notify`) on the waiting task's stack,
/// labelled `cancelled=true` if the future is dropped waiting. A notification
/// is not a lock release: nothing goes to the mutex profile.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use syncprof::tokio::Notify;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let notify = Arc::new(Notify::new());
/// let waiter = notify.clone();
/// let task = tokio::spawn(async move { waiter.notified().await });
/// notify.notify_one();
/// task.await.unwrap();
/// # });
/// ```
pub struct Notify {
    site: LockSite,
    inner: tokio::sync::Notify,
}

/// The recorded wait inside both futures: tokio's `Notified` in a
/// [`Waited`], which does the recording.
type NotifiedWait<'a> = Waited<'static, tokio::sync::futures::Notified<'a>>;

/// The future of [`Notify::notified`].
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Notified<'a> {
    inner: NotifiedWait<'a>,
}

/// The future of [`Notify::notified_owned`]: [`Notified`] that owns an
/// `Arc` of its `Notify` instead of borrowing it, so it is `'static` and can
/// move into a spawned task. Recorded as [`Notified`] is.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use syncprof::tokio::Notify;
/// use syncprof::tokio::futures::OwnedNotified;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let notify = Arc::new(Notify::new());
/// let notified: OwnedNotified = notify.clone().notified_owned();
/// let task = tokio::spawn(notified); // 'static: no borrow of `notify`
/// notify.notify_waiters();
/// task.await.unwrap();
/// # });
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct OwnedNotified {
    /// Borrows `*notify` (the `'static` is a lie that never leaves this
    /// type): declared first, so dropped first, while `notify` still keeps
    /// the `Notify` alive.
    inner: MaybeDangling<NotifiedWait<'static>>,
    notify: Arc<Notify>,
}

impl Notify {
    /// A `Notify` with no permit stored, labelled with the caller's location.
    #[track_caller]
    pub fn new() -> Notify {
        Self::const_new()
    }

    /// [`new`](Self::new) in a `const` context.
    #[track_caller]
    pub const fn const_new() -> Notify {
        Notify {
            site: Location::caller(),
            inner: tokio::sync::Notify::const_new(),
        }
    }

    /// A recorded wait for a notification.
    #[inline]
    fn wait(&self) -> NotifiedWait<'_> {
        Waited::new(self.inner.notified(), EventKind::Notify, self.site, None)
    }

    /// Waits for a notification (see tokio's `Notify::notified`).
    pub fn notified(&self) -> Notified<'_> {
        Notified { inner: self.wait() }
    }

    /// Waits for a notification with a future that owns an `Arc` of the
    /// `Notify` (see tokio's `Notify::notified_owned`): `'static`, so it can
    /// be spawned or stored. Recorded as [`notified`](Self::notified) is.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use syncprof::tokio::Notify;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let notify = Arc::new(Notify::new());
    /// let waiters: Vec<_> = (0..3)
    ///     .map(|_| tokio::spawn(notify.clone().notified_owned()))
    ///     .collect();
    /// tokio::task::yield_now().await; // the waiters are waiting
    /// notify.notify_waiters();
    /// for waiter in waiters {
    ///     waiter.await.unwrap();
    /// }
    /// # });
    /// ```
    pub fn notified_owned(self: Arc<Self>) -> OwnedNotified {
        // SAFETY: the `Notify` lives in the `Arc` for as long as `self`, which
        // moves into the future and is dropped only after `inner`, the one
        // holder of the reference (see `OwnedNotified`).
        let notify: &'static Notify = unsafe { &*Arc::as_ptr(&self) };
        OwnedNotified {
            inner: MaybeDangling::new(notify.wait()),
            notify: self,
        }
    }

    /// Wakes one waiting task, or stores a permit for the next.
    pub fn notify_one(&self) {
        self.inner.notify_one();
    }

    /// Wakes the most recent waiter, or stores a permit for the next.
    pub fn notify_last(&self) {
        self.inner.notify_last();
    }

    /// Wakes every task waiting now (stores no permit).
    pub fn notify_waiters(&self) {
        self.inner.notify_waiters();
    }
}

impl Default for Notify {
    #[track_caller]
    fn default() -> Notify {
        Notify::new()
    }
}

impl fmt::Debug for Notify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

/// Registers `wait` as a waiter without waiting (tokio's
/// `Notified::enable`): the body of both futures' `enable`.
fn enable(wait: Pin<&mut NotifiedWait<'_>>) -> bool {
    wait.inner_mut().enable()
}

impl<'a> Notified<'a> {
    fn waited(self: Pin<&mut Self>) -> Pin<&mut NotifiedWait<'a>> {
        // SAFETY: `inner` is structurally pinned: never moved out of a
        // pinned `Notified` (which is `Unpin` only when `inner` is).
        unsafe { self.map_unchecked_mut(|n| &mut n.inner) }
    }

    /// Registers as a waiter without waiting (see tokio's
    /// `Notified::enable`); returns whether a notification was already
    /// received.
    pub fn enable(self: Pin<&mut Self>) -> bool {
        enable(self.waited())
    }
}

impl Future for Notified<'_> {
    type Output = ();

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.waited().poll(cx)
    }
}

impl fmt::Debug for Notified<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notified").finish_non_exhaustive()
    }
}

impl OwnedNotified {
    fn waited(self: Pin<&mut Self>) -> Pin<&mut NotifiedWait<'static>> {
        // SAFETY: `inner` is structurally pinned: never moved out of a
        // pinned `OwnedNotified` (which is `Unpin` only when `inner` is); the
        // value in it is initialised from `new` until its `drop`.
        unsafe { self.map_unchecked_mut(|n| n.inner.get_mut()) }
    }

    /// Registers as a waiter without waiting (see tokio's
    /// `OwnedNotified::enable`), so that a `notify_one` before the first poll
    /// goes to this future; returns whether a notification was already
    /// received.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use syncprof::tokio::Notify;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let notify = Arc::new(Notify::new());
    /// let mut notified = Box::pin(notify.clone().notified_owned());
    /// assert!(!notified.as_mut().enable()); // queued, not notified yet
    /// notify.notify_one(); // goes to the enabled future
    /// notified.await;
    /// # });
    /// ```
    pub fn enable(self: Pin<&mut Self>) -> bool {
        enable(self.waited())
    }
}

impl Future for OwnedNotified {
    type Output = ();

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.waited().poll(cx)
    }
}

impl fmt::Debug for OwnedNotified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedNotified")
            .field("notify", &self.notify)
            .finish_non_exhaustive()
    }
}

/// A `T` whose references may dangle once it is dropped, before its holder
/// is (tokio-util's `MaybeDangling`, kept for its `cancelled_owned` for the
/// same reason): in a `MaybeUninit`, so that the compiler assumes nothing of
/// the references inside while an [`OwnedNotified`] is passed by value (to
/// `drop`, say), which ends in freeing what they point to.
struct MaybeDangling<T>(MaybeUninit<T>);

impl<T> MaybeDangling<T> {
    #[inline]
    fn new(value: T) -> Self {
        MaybeDangling(MaybeUninit::new(value))
    }

    #[inline]
    fn get_mut(&mut self) -> &mut T {
        // SAFETY: initialised by `new`, dropped only by `drop`.
        unsafe { self.0.assume_init_mut() }
    }
}

impl<T> Drop for MaybeDangling<T> {
    fn drop(&mut self) {
        // SAFETY: initialised by `new`, dropped only here, once.
        unsafe { self.0.assume_init_drop() }
    }
}
