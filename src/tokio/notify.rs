//! [`Notify`]: `tokio::sync::Notify` whose waits are recorded.

use core::fmt;
use core::future::Future;
use core::panic::Location;
use core::pin::Pin;
use core::task::{Context, Poll};

use super::wait::Waited;
use crate::profile::{EventKind, LockSite};

/// Notifies a single task, or all waiting tasks: a drop-in replacement for
/// [`tokio::sync::Notify`] (tokio's does the work).
///
/// A [`notified`](Self::notified)`.await` that returns `Pending` is one
/// block-profile event (kind `notify`) on the waiting task's stack, labelled
/// `cancelled=true` if the future is dropped waiting. A notification is not a
/// lock release: nothing goes to the mutex profile. (tokio's
/// `notified_owned` is not wrapped.)
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

/// The future of [`Notify::notified`].
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Notified<'a> {
    inner: Waited<'static, tokio::sync::futures::Notified<'a>>,
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

    /// Waits for a notification (see tokio's `Notify::notified`).
    pub fn notified(&self) -> Notified<'_> {
        Notified {
            inner: Waited::new(self.inner.notified(), EventKind::Notify, self.site, None),
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

impl<'a> Notified<'a> {
    fn waited(
        self: Pin<&mut Self>,
    ) -> Pin<&mut Waited<'static, tokio::sync::futures::Notified<'a>>> {
        // SAFETY: `inner` is structurally pinned: never moved out of a
        // pinned `Notified` (which is `Unpin` only when `inner` is).
        unsafe { self.map_unchecked_mut(|n| &mut n.inner) }
    }

    /// Registers as a waiter without waiting (see tokio's
    /// `Notified::enable`); returns whether a notification was already
    /// received.
    pub fn enable(self: Pin<&mut Self>) -> bool {
        self.waited().inner_mut().enable()
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
