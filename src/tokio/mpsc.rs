//! `tokio::sync::mpsc` whose waits are recorded: a send (or `reserve`) that
//! finds the bounded channel full, a receive that finds a channel empty.

use core::fmt;
use core::future::Future;
use core::panic::Location;
use core::task::{Context, Poll};
use std::time::Duration;

use super::wait::recorded;
use crate::profile::{EventKind, LockSite};

pub use tokio::sync::mpsc::{Permit, PermitIterator, UnboundedSender, WeakUnboundedSender, error};

use error::{SendError, SendTimeoutError, TryRecvError, TrySendError};

/// A bounded channel of `buffer` messages: tokio's, with a `send().await` /
/// `reserve().await` that returns `Pending` (channel full) recorded as kind
/// `async_chan_send` and a `recv().await` that returns `Pending` (channel
/// empty) as `async_chan_recv`, on the waiting task's stack, labelled with the
/// location of this call. Waiting for a message or for room is not lock
/// contention: nothing goes to the mutex profile.
///
/// # Panics
///
/// If `buffer` is 0 (as tokio's).
///
/// # Examples
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let (tx, mut rx) = syncprof::tokio::mpsc::channel(1);
/// tokio::spawn(async move { tx.send(7).await.unwrap() });
/// assert_eq!(rx.recv().await, Some(7));
/// # });
/// ```
#[track_caller]
pub fn channel<T>(buffer: usize) -> (Sender<T>, Receiver<T>) {
    let site = Location::caller();
    let (tx, rx) = tokio::sync::mpsc::channel(buffer);
    (Sender { inner: tx, site }, Receiver { inner: rx, site })
}

/// An unbounded channel: tokio's; its sends never wait (the sender is
/// tokio's own [`UnboundedSender`]), a `recv().await` that waits is recorded
/// as kind `async_chan_recv`.
#[track_caller]
pub fn unbounded_channel<T>() -> (UnboundedSender<T>, UnboundedReceiver<T>) {
    let site = Location::caller();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    (tx, UnboundedReceiver { inner: rx, site })
}

/// The sending half of a bounded [`channel`]. Cloned to make more senders.
pub struct Sender<T> {
    inner: tokio::sync::mpsc::Sender<T>,
    site: LockSite,
}

/// A sender that does not keep the channel open; see
/// [`Sender::downgrade`].
pub struct WeakSender<T> {
    inner: tokio::sync::mpsc::WeakSender<T>,
    site: LockSite,
}

/// A slot reserved in the channel by [`Sender::reserve_owned`], owning the
/// sender.
pub struct OwnedPermit<T> {
    inner: tokio::sync::mpsc::OwnedPermit<T>,
    site: LockSite,
}

/// The receiving half of a bounded [`channel`].
pub struct Receiver<T> {
    inner: tokio::sync::mpsc::Receiver<T>,
    site: LockSite,
}

/// The receiving half of an [`unbounded_channel`].
pub struct UnboundedReceiver<T> {
    inner: tokio::sync::mpsc::UnboundedReceiver<T>,
    site: LockSite,
}

impl<T> Sender<T> {
    /// Sends `value`, waiting for room.
    ///
    /// # Errors
    ///
    /// The value back, if the receiver is gone.
    pub fn send(&self, value: T) -> impl Future<Output = Result<(), SendError<T>>> {
        recorded!(
            Send,
            self.inner.send(value),
            EventKind::AsyncChanSend,
            self.site,
            None,
            |result| result,
        )
    }

    /// Waits for the receiver to close.
    pub async fn closed(&self) {
        self.inner.closed().await;
    }

    /// Sends if there is room now.
    ///
    /// # Errors
    ///
    /// [`TrySendError::Full`] or [`TrySendError::Closed`], with the value.
    pub fn try_send(&self, message: T) -> Result<(), TrySendError<T>> {
        self.inner.try_send(message)
    }

    /// Sends, waiting at most `timeout` for room.
    ///
    /// # Errors
    ///
    /// [`SendTimeoutError`] with the value.
    pub fn send_timeout(
        &self,
        value: T,
        timeout: Duration,
    ) -> impl Future<Output = Result<(), SendTimeoutError<T>>> {
        recorded!(
            SendTimeout,
            self.inner.send_timeout(value, timeout),
            EventKind::AsyncChanSend,
            self.site,
            None,
            |result| result,
        )
    }

    /// Sends from synchronous code, blocking the thread.
    ///
    /// # Errors
    ///
    /// The value back, if the receiver is gone.
    ///
    /// # Panics
    ///
    /// As tokio's, inside an asynchronous execution context.
    pub fn blocking_send(&self, value: T) -> Result<(), SendError<T>> {
        self.inner.blocking_send(value)
    }

    /// Whether the receiver is gone.
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Waits for room and reserves one slot.
    ///
    /// # Errors
    ///
    /// If the receiver is gone.
    pub fn reserve(&self) -> impl Future<Output = Result<Permit<'_, T>, SendError<()>>> {
        recorded!(
            Reserve,
            self.inner.reserve(),
            EventKind::AsyncChanSend,
            self.site,
            None,
            |result| result,
        )
    }

    /// Waits for room and reserves `n` slots.
    ///
    /// # Errors
    ///
    /// If the receiver is gone.
    pub fn reserve_many(
        &self,
        n: usize,
    ) -> impl Future<Output = Result<PermitIterator<'_, T>, SendError<()>>> {
        recorded!(
            ReserveMany,
            self.inner.reserve_many(n),
            EventKind::AsyncChanSend,
            self.site,
            None,
            |result| result,
        )
    }

    /// Waits for room and reserves one slot, moving the sender into the
    /// permit.
    ///
    /// # Errors
    ///
    /// If the receiver is gone.
    pub fn reserve_owned(self) -> impl Future<Output = Result<OwnedPermit<T>, SendError<()>>> {
        let site = self.site;
        recorded!(
            ReserveOwned,
            self.inner.reserve_owned(),
            EventKind::AsyncChanSend,
            site,
            None,
            move |inner| Ok(OwnedPermit {
                inner: inner?,
                site
            }),
        )
    }

    /// Reserves a slot if there is room now.
    ///
    /// # Errors
    ///
    /// Full or closed.
    pub fn try_reserve(&self) -> Result<Permit<'_, T>, TrySendError<()>> {
        self.inner.try_reserve()
    }

    /// Reserves `n` slots if there is room now.
    ///
    /// # Errors
    ///
    /// Full or closed.
    pub fn try_reserve_many(&self, n: usize) -> Result<PermitIterator<'_, T>, TrySendError<()>> {
        self.inner.try_reserve_many(n)
    }

    /// Reserves a slot if there is room now, moving the sender into the
    /// permit.
    ///
    /// # Errors
    ///
    /// Full or closed, with the sender back.
    pub fn try_reserve_owned(self) -> Result<OwnedPermit<T>, TrySendError<Self>> {
        let site = self.site;
        match self.inner.try_reserve_owned() {
            Ok(inner) => Ok(OwnedPermit { inner, site }),
            Err(TrySendError::Full(inner)) => Err(TrySendError::Full(Sender { inner, site })),
            Err(TrySendError::Closed(inner)) => Err(TrySendError::Closed(Sender { inner, site })),
        }
    }

    /// Whether both senders send to the same channel.
    pub fn same_channel(&self, other: &Self) -> bool {
        self.inner.same_channel(&other.inner)
    }

    /// The free slots now.
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    /// A [`WeakSender`] for this channel.
    pub fn downgrade(&self) -> WeakSender<T> {
        WeakSender {
            inner: self.inner.downgrade(),
            site: self.site,
        }
    }

    /// The channel's buffer size.
    pub fn max_capacity(&self) -> usize {
        self.inner.max_capacity()
    }

    /// The number of [`Sender`]s.
    pub fn strong_count(&self) -> usize {
        self.inner.strong_count()
    }

    /// The number of [`WeakSender`]s.
    pub fn weak_count(&self) -> usize {
        self.inner.weak_count()
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender {
            inner: self.inner.clone(),
            site: self.site,
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

impl<T> WeakSender<T> {
    /// A [`Sender`], if the channel is still open.
    pub fn upgrade(&self) -> Option<Sender<T>> {
        Some(Sender {
            inner: self.inner.upgrade()?,
            site: self.site,
        })
    }

    /// The number of [`Sender`]s.
    pub fn strong_count(&self) -> usize {
        self.inner.strong_count()
    }

    /// The number of [`WeakSender`]s.
    pub fn weak_count(&self) -> usize {
        self.inner.weak_count()
    }
}

impl<T> Clone for WeakSender<T> {
    fn clone(&self) -> Self {
        WeakSender {
            inner: self.inner.clone(),
            site: self.site,
        }
    }
}

impl<T> fmt::Debug for WeakSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

impl<T> OwnedPermit<T> {
    /// Sends into the reserved slot; returns the sender.
    pub fn send(self, value: T) -> Sender<T> {
        Sender {
            inner: self.inner.send(value),
            site: self.site,
        }
    }

    /// Gives the slot back unused; returns the sender.
    pub fn release(self) -> Sender<T> {
        Sender {
            inner: self.inner.release(),
            site: self.site,
        }
    }

    /// Whether both permits are for the same channel.
    pub fn same_channel(&self, other: &Self) -> bool {
        self.inner.same_channel(&other.inner)
    }

    /// Whether this permit is for `sender`'s channel.
    pub fn same_channel_as_sender(&self, sender: &Sender<T>) -> bool {
        self.inner.same_channel_as_sender(&sender.inner)
    }
}

impl<T> fmt::Debug for OwnedPermit<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

/// The receive methods both receivers share.
macro_rules! receiver_methods {
    () => {
        /// Receives the next message, waiting for one; `None` once the
        /// channel is closed and empty.
        pub fn recv(&mut self) -> impl Future<Output = Option<T>> {
            let site = self.site;
            recorded!(
                Recv,
                self.inner.recv(),
                EventKind::AsyncChanRecv,
                site,
                None,
                |message| message,
            )
        }

        /// Receives up to `limit` messages into `buffer`, waiting for at
        /// least one; returns how many (0 once closed and empty, or when
        /// `limit` is 0).
        pub fn recv_many(
            &mut self,
            buffer: &mut Vec<T>,
            limit: usize,
        ) -> impl Future<Output = usize> {
            let site = self.site;
            recorded!(
                RecvMany,
                self.inner.recv_many(buffer, limit),
                EventKind::AsyncChanRecv,
                site,
                None,
                |received| received,
            )
        }

        /// Receives a message if one is there now.
        ///
        /// # Errors
        ///
        /// [`TryRecvError::Empty`] or [`TryRecvError::Disconnected`].
        pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
            self.inner.try_recv()
        }

        /// Receives from synchronous code, blocking the thread.
        ///
        /// # Panics
        ///
        /// As tokio's, inside an asynchronous execution context.
        pub fn blocking_recv(&mut self) -> Option<T> {
            self.inner.blocking_recv()
        }

        /// [`recv_many`](Self::recv_many) from synchronous code.
        ///
        /// # Panics
        ///
        /// As tokio's, inside an asynchronous execution context.
        pub fn blocking_recv_many(&mut self, buffer: &mut Vec<T>, limit: usize) -> usize {
            self.inner.blocking_recv_many(buffer, limit)
        }

        /// Closes the channel to senders; buffered messages can still be
        /// received.
        pub fn close(&mut self) {
            self.inner.close();
        }

        /// Whether the channel is closed.
        pub fn is_closed(&self) -> bool {
            self.inner.is_closed()
        }

        /// Whether no message is buffered.
        pub fn is_empty(&self) -> bool {
            self.inner.is_empty()
        }

        /// The number of buffered messages.
        pub fn len(&self) -> usize {
            self.inner.len()
        }

        /// Polls for the next message (not recorded: a manual poll has no
        /// wait to delimit).
        pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
            self.inner.poll_recv(cx)
        }

        /// Polls for up to `limit` messages (not recorded).
        pub fn poll_recv_many(
            &mut self,
            cx: &mut Context<'_>,
            buffer: &mut Vec<T>,
            limit: usize,
        ) -> Poll<usize> {
            self.inner.poll_recv_many(cx, buffer, limit)
        }

        /// The number of strong senders.
        pub fn sender_strong_count(&self) -> usize {
            self.inner.sender_strong_count()
        }

        /// The number of weak senders.
        pub fn sender_weak_count(&self) -> usize {
            self.inner.sender_weak_count()
        }
    };
}

impl<T> Receiver<T> {
    receiver_methods!();

    /// The free slots now.
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    /// The channel's buffer size.
    pub fn max_capacity(&self) -> usize {
        self.inner.max_capacity()
    }
}

impl<T> UnboundedReceiver<T> {
    receiver_methods!();
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

impl<T> fmt::Debug for UnboundedReceiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}
