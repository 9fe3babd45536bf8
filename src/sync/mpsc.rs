//! Multi-producer, single-consumer channels with `std::sync::mpsc`'s API that
//! record their blocking waits in the block profile.
//!
//! Replace `use std::sync::mpsc` with `use syncprof::mpsc` and nothing else
//! changes: the queues *are* std's (each handle wraps the std handle), so
//! ordering, capacity, disconnection and the errors that hand the value back
//! behave exactly as in std. The error types are std's own, re-exported.
//!
//! # What is recorded
//!
//! Every operation first tries std's non-blocking form (`try_recv`,
//! `try_send`). Only when that would block does it take a `#[cold]` slow
//! path. There `recv` and the blocking iterators first poll the channel
//! briefly (~100 pauses, ~3 µs, as a `Mutex` waiter spins; an eighth of that
//! while this receiver's recent polls found their messages only late, past
//! half the poll, as the `Mutex`'s poll shortens); an operation
//! still blocked after that (and every `recv_timeout` or bounded `send`
//! that found the channel empty or full), if block profiling is on
//! ([`set_block_rate`]), is timed through std's blocking call and recorded
//! as one block event. (A bounded `send` does not poll: on a rendezvous
//! channel, `sync_channel(0)`, a sender and a receiver that both polled
//! would never meet until one of them blocked.)
//!
//! | operation | when it records | [`EventKind`] |
//! |---|---|---|
//! | [`Receiver::recv`], the next step of [`Iter`] / [`IntoIter`] | the channel stayed empty through the brief poll | [`ChanRecv`](EventKind::ChanRecv) |
//! | [`Receiver::recv_timeout`] | the channel was empty | [`ChanRecv`](EventKind::ChanRecv) |
//! | [`SyncSender::send`] | the buffer was full, or (capacity 0) no receiver was waiting | [`ChanSend`](EventKind::ChanSend) |
//!
//! The event's delay runs from the start of the wait (before the brief
//! poll) to its end, whether the wait ended with a message, a disconnection
//! or a timeout. Its stack is the
//! waiting thread's, leaf first, starting at the public method above
//! (`Receiver::recv`, `SyncSender::send`, `Iter::next`, ...); its lock site is
//! where [`channel`] or [`sync_channel`] was called. [`Sender::send`],
//! [`SyncSender::try_send`], [`Receiver::try_recv`] and [`TryIter`] never
//! block and never record. An operation that does not block costs what std's
//! costs, plus one predictable branch.
//!
//! [`set_block_rate`]: crate::set_block_rate
//! [`EventKind`]: crate::profile::EventKind
//!
//! # Examples
//!
//! ```
//! use std::thread;
//! use syncprof::mpsc;
//!
//! syncprof::set_block_rate(1); // record every blocking wait
//! let (tx, rx) = mpsc::channel();
//! let producer = thread::spawn(move || {
//!     for i in 0..10 {
//!         tx.send(i).unwrap();
//!     }
//! });
//! // Waits for the producer (when it is slower): those waits are recorded.
//! let sum: i32 = rx.iter().sum();
//! producer.join().unwrap();
//! assert_eq!(sum, 45);
//!
//! for record in syncprof::profile::block().records() {
//!     println!("{:?} at {:?}: {:?}", record.event_kind(), record.lock_site(), record.delay());
//! }
//! # syncprof::set_block_rate(0);
//! ```

use core::fmt;
use core::panic::Location;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

pub use std::sync::mpsc::{RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError};

use crate::profile::{self, EventKind, LockSite, StackMark};
use crate::raw::poll_history::{self, Outcome};
use crate::raw::{backoff, hardware};

mod iter;
pub use iter::{IntoIter, Iter, TryIter};

/// Creates an unbounded channel, as [`std::sync::mpsc::channel`].
///
/// Sending never blocks; [`Receiver::recv`] blocks while the channel is
/// empty, and those waits are recorded in the block profile with the caller
/// of `channel` as their lock site.
///
/// # Examples
///
/// ```
/// use std::thread;
/// use syncprof::mpsc::channel;
///
/// let (tx, rx) = channel();
/// thread::spawn(move || tx.send(42).unwrap());
/// assert_eq!(rx.recv(), Ok(42));
/// ```
#[track_caller]
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let site = Location::caller();
    let (tx, rx) = std_mpsc::channel();
    (Sender { inner: tx }, Receiver { inner: rx, site })
}

/// Creates a channel whose buffer holds at most `bound` messages, as
/// [`std::sync::mpsc::sync_channel`].
///
/// [`SyncSender::send`] blocks while the buffer is full. With `bound == 0`
/// the channel is a rendezvous: every `send` waits until a receiver takes the
/// message. Both the senders' and the receiver's waits are recorded in the
/// block profile with the caller of `sync_channel` as their lock site.
///
/// # Examples
///
/// ```
/// use std::thread;
/// use syncprof::mpsc::sync_channel;
///
/// let (tx, rx) = sync_channel(1);
/// tx.send(1).unwrap(); // fills the buffer without blocking
/// let sender = thread::spawn(move || tx.send(2).unwrap()); // waits for room
/// assert_eq!(rx.recv(), Ok(1));
/// assert_eq!(rx.recv(), Ok(2));
/// sender.join().unwrap();
/// ```
///
/// A rendezvous channel:
///
/// ```
/// use std::thread;
/// use syncprof::mpsc::sync_channel;
///
/// let (tx, rx) = sync_channel(0);
/// let sender = thread::spawn(move || tx.send("hand over").unwrap());
/// assert_eq!(rx.recv(), Ok("hand over"));
/// sender.join().unwrap();
/// ```
#[track_caller]
pub fn sync_channel<T>(bound: usize) -> (SyncSender<T>, Receiver<T>) {
    let site = Location::caller();
    let (tx, rx) = std_mpsc::sync_channel(bound);
    (SyncSender { inner: tx, site }, Receiver { inner: rx, site })
}

/// The sending half of a [`channel`], as [`std::sync::mpsc::Sender`].
///
/// Sending on an unbounded channel never blocks, so a `Sender` records
/// nothing; it is std's sender, wrapped. Clone it to send from several
/// threads (it is also `Sync`, as std's is).
///
/// # Examples
///
/// ```
/// use std::thread;
/// use syncprof::mpsc::channel;
///
/// let (tx, rx) = channel();
/// let workers: Vec<_> = (0..3)
///     .map(|id| {
///         let tx = tx.clone();
///         thread::spawn(move || tx.send(id).unwrap())
///     })
///     .collect();
/// drop(tx);
/// let mut ids: Vec<i32> = rx.iter().collect();
/// ids.sort();
/// assert_eq!(ids, [0, 1, 2]);
/// for worker in workers {
///     worker.join().unwrap();
/// }
/// ```
pub struct Sender<T> {
    inner: std_mpsc::Sender<T>,
}

impl<T> Sender<T> {
    /// Sends `t` on the channel without blocking, as
    /// [`std::sync::mpsc::Sender::send`]. Records nothing.
    ///
    /// A successful send does not mean the message will be received: the
    /// receiver may be dropped before it gets to it.
    ///
    /// # Errors
    ///
    /// Returns [`SendError`] holding `t` when the [`Receiver`] has been
    /// dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use syncprof::mpsc::{channel, SendError};
    ///
    /// let (tx, rx) = channel();
    /// assert_eq!(tx.send(1), Ok(()));
    /// drop(rx);
    /// assert_eq!(tx.send(2), Err(SendError(2)));
    /// ```
    #[inline]
    pub fn send(&self, t: T) -> Result<(), SendError<T>> {
        self.inner.send(t)
    }
}

impl<T> Clone for Sender<T> {
    /// Another sender on the same channel; the channel stays connected until
    /// every sender is dropped.
    fn clone(&self) -> Self {
        Sender {
            inner: self.inner.clone(),
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender").finish_non_exhaustive()
    }
}

/// The sending half of a [`sync_channel`], as [`std::sync::mpsc::SyncSender`].
///
/// Records a block event (kind [`ChanSend`](crate::profile::EventKind::ChanSend),
/// the sender's stack, leaf `SyncSender::send`) for every
/// [`send`](Self::send) that has to wait for room in the buffer, or, on a
/// rendezvous channel, for the receiver. [`try_send`](Self::try_send) never
/// records.
///
/// # Examples
///
/// ```
/// use std::thread;
/// use syncprof::mpsc::sync_channel;
///
/// let (tx, rx) = sync_channel(2);
/// let tx2 = tx.clone();
/// thread::spawn(move || tx.send(1).unwrap());
/// thread::spawn(move || tx2.send(2).unwrap());
/// let mut got = [rx.recv().unwrap(), rx.recv().unwrap()];
/// got.sort();
/// assert_eq!(got, [1, 2]);
/// ```
pub struct SyncSender<T> {
    inner: std_mpsc::SyncSender<T>,
    site: LockSite,
}

impl<T> SyncSender<T> {
    /// Sends `t`, waiting while the buffer is full, as
    /// [`std::sync::mpsc::SyncSender::send`]. On a rendezvous channel
    /// (`sync_channel(0)`) it waits until the receiver takes `t`.
    ///
    /// A send that had to wait is recorded in the block profile (kind
    /// `chan_send`), including one ended by the receiver's disconnection.
    ///
    /// # Errors
    ///
    /// Returns [`SendError`] holding `t` when the [`Receiver`] has been
    /// dropped, before or during the wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::thread;
    /// use syncprof::mpsc::{sync_channel, SendError};
    ///
    /// let (tx, rx) = sync_channel(0);
    /// let sender = thread::spawn(move || {
    ///     tx.send(1).unwrap(); // waits for the receiver
    ///     tx
    /// });
    /// assert_eq!(rx.recv(), Ok(1));
    /// let tx = sender.join().unwrap();
    /// drop(rx);
    /// assert_eq!(tx.send(2), Err(SendError(2)));
    /// ```
    #[inline]
    pub fn send(&self, t: T) -> Result<(), SendError<T>> {
        match self.inner.try_send(t) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(t)) => {
                let result = self.send_blocking(t);
                crate::profile::keep_frame();
                result
            }
            Err(TrySendError::Disconnected(t)) => Err(SendError(t)),
        }
    }

    /// The wait of [`send`](Self::send): std's blocking send, timed when
    /// block profiling is on. Called only from `send`, so that the recorded
    /// stack starts there.
    #[cold]
    #[inline(never)]
    fn send_blocking(&self, t: T) -> Result<(), SendError<T>> {
        let mark = 0u8;
        let mark = StackMark::of(core::hint::black_box(&mark));
        let Some(start) = profile::begin_blocking(EventKind::ChanSend, Some(self.site), 0, mark)
        else {
            return self.inner.send(t);
        };
        let result = self.inner.send(t);
        profile::end_blocking(start, EventKind::ChanSend, Some(self.site), mark);
        result
    }

    /// Sends `t` only if that needs no waiting, as
    /// [`std::sync::mpsc::SyncSender::try_send`]. Records nothing.
    ///
    /// # Errors
    ///
    /// Returns [`TrySendError::Full`] holding `t` when the buffer is full (on
    /// a rendezvous channel: when no receiver is waiting), and
    /// [`TrySendError::Disconnected`] holding `t` when the [`Receiver`] has
    /// been dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use syncprof::mpsc::{sync_channel, TrySendError};
    ///
    /// let (tx, rx) = sync_channel(1);
    /// assert_eq!(tx.try_send(1), Ok(()));
    /// assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
    /// drop(rx);
    /// assert_eq!(tx.try_send(3), Err(TrySendError::Disconnected(3)));
    /// ```
    #[inline]
    pub fn try_send(&self, t: T) -> Result<(), TrySendError<T>> {
        self.inner.try_send(t)
    }
}

impl<T> Clone for SyncSender<T> {
    /// Another sender on the same channel (same lock site); the channel stays
    /// connected until every sender is dropped.
    fn clone(&self) -> Self {
        SyncSender {
            inner: self.inner.clone(),
            site: self.site,
        }
    }
}

impl<T> fmt::Debug for SyncSender<T> {
    /// `std`'s format, `SyncSender { .. }` (the creation site is in the
    /// profiles, not here).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncSender").finish_non_exhaustive()
    }
}

/// The receiving half of a [`channel`] or [`sync_channel`], as
/// [`std::sync::mpsc::Receiver`].
///
/// Records a block event (kind [`ChanRecv`](crate::profile::EventKind::ChanRecv),
/// the receiver's stack) for every [`recv`](Self::recv),
/// [`recv_timeout`](Self::recv_timeout) and step of [`iter`](Self::iter) or
/// [`into_iter`](IntoIterator::into_iter) that finds the channel empty and
/// waits, whether the wait ends with a message, a disconnection or a
/// timeout. [`try_recv`](Self::try_recv) and [`try_iter`](Self::try_iter)
/// never record.
///
/// # Examples
///
/// ```
/// use std::thread;
/// use std::time::Duration;
/// use syncprof::mpsc::channel;
///
/// let (tx, rx) = channel();
/// thread::spawn(move || {
///     tx.send("now").unwrap();
///     thread::sleep(Duration::from_millis(10));
///     tx.send("later").unwrap();
/// });
/// assert_eq!(rx.recv(), Ok("now"));
/// assert_eq!(rx.recv(), Ok("later")); // waited about 10 ms: recorded
/// ```
pub struct Receiver<T> {
    inner: std_mpsc::Receiver<T>,
    site: LockSite,
}

impl<T> Receiver<T> {
    /// Takes a message if one is waiting, without blocking, as
    /// [`std::sync::mpsc::Receiver::try_recv`]. Records nothing.
    ///
    /// # Errors
    ///
    /// Returns [`TryRecvError::Empty`] when no message is waiting but a
    /// sender is still connected, and [`TryRecvError::Disconnected`] when the
    /// channel is empty and every sender has been dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use syncprof::mpsc::{channel, TryRecvError};
    ///
    /// let (tx, rx) = channel();
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// tx.send(7).unwrap();
    /// drop(tx);
    /// assert_eq!(rx.try_recv(), Ok(7));
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    /// ```
    #[inline]
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.inner.try_recv()
    }

    /// Takes the next message, waiting while the channel is empty, as
    /// [`std::sync::mpsc::Receiver::recv`].
    ///
    /// Messages already sent are received even after every sender has been
    /// dropped. A call that had to wait is recorded in the block profile
    /// (kind `chan_recv`).
    ///
    /// # Errors
    ///
    /// Returns [`RecvError`] when the channel is empty and every sender has
    /// been dropped, before or during the wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::thread;
    /// use syncprof::mpsc::{channel, RecvError};
    ///
    /// let (tx, rx) = channel();
    /// thread::spawn(move || tx.send(1).unwrap()).join().unwrap();
    /// assert_eq!(rx.recv(), Ok(1));
    /// assert_eq!(rx.recv(), Err(RecvError)); // the sender is gone
    /// ```
    #[inline]
    pub fn recv(&self) -> Result<T, RecvError> {
        match self.inner.try_recv() {
            Ok(t) => Ok(t),
            Err(TryRecvError::Empty) => {
                let result = self.recv_blocking();
                crate::profile::keep_frame();
                result
            }
            Err(TryRecvError::Disconnected) => Err(RecvError),
        }
    }

    /// The key of this receiver's poll history (`poll_history`): its own
    /// address. A receiver moved elsewhere starts a new history (full polls
    /// until they find messages late again).
    fn history_key(&self) -> usize {
        core::ptr::from_ref(self).addr()
    }

    /// The wait of [`recv`](Self::recv) and of the blocking iterators: std's
    /// blocking receive, timed when block profiling is on. Called only
    /// directly from those public methods, so that the recorded stack starts
    /// there.
    #[cold]
    #[inline(never)]
    fn recv_blocking(&self) -> Result<T, RecvError> {
        let mark = 0u8;
        let mark = StackMark::of(core::hint::black_box(&mark));
        let since = profile::block_start();
        // First up to ~2.7 µs: `try_recv` every few pauses, as a Mutex
        // waiter's first spin reads its lock. A receive that this completes
        // is not a blocking wait and records nothing. On the 2-core VM
        // (`benches/ratios.rs`, 41 rounds, four runs) it takes
        // `sync_channel(64)` 1 -> 1 from 1.09–1.90× std's throughput to
        // 2.5–5.1×; `channel()` 4 -> 1, std's own queue, stays at parity
        // (0.98–1.01 over 205 rounds, five runs).
        //
        // Where this receiver's polls find their message only late (past
        // half the poll), it waits on a producer slower than itself, and a
        // poll that catches every message spins through every gap between
        // two: an eighth of the poll then, as the Mutex's (`poll_history`).
        // Parked instead, it drains at each wake-up what came meanwhile, one
        // park for several messages. Measured (`benches/grid.rs`, channel
        // 1 -> 1 with ~1 µs of work per message, 2026-12-05):
        // CPU per message 1.29–1.36× std's at 1.20–1.26× its throughput
        // with a full poll every time; with the rule 0.96–1.06× its CPU at
        // 0.97–1.04× its throughput (docs/performance-spins-channel.md).
        let plan = poll_history::plan(self.history_key(), hardware::POLL_PAUSES);
        let mut outcome = Outcome::RanOut;
        let polled = backoff::poll_spaced(plan.pauses, 1, hardware::POLL_STEP, |spent| {
            match self.inner.try_recv() {
                Ok(t) => {
                    outcome = Outcome::Free(spent);
                    Some(Ok(t))
                }
                Err(TryRecvError::Empty) => None,
                // Says nothing of how late messages come.
                Err(TryRecvError::Disconnected) => Some(Err(RecvError)),
            }
        });
        poll_history::learn(plan, outcome);
        if let Some(result) = polled {
            return result;
        }
        let Some(mut start) =
            profile::begin_blocking(EventKind::ChanRecv, Some(self.site), 0, mark)
        else {
            return self.inner.recv();
        };
        if let Some(since) = since {
            start.start_at(since);
        }
        let result = self.inner.recv();
        profile::end_blocking(start, EventKind::ChanRecv, Some(self.site), mark);
        result
    }

    /// Takes the next message, waiting at most `timeout` while the channel is
    /// empty, as [`std::sync::mpsc::Receiver::recv_timeout`]. A timeout too
    /// large to represent as a deadline (such as [`Duration::MAX`]) waits
    /// without limit.
    ///
    /// A call that had to wait is recorded in the block profile (kind
    /// `chan_recv`), including one that timed out; a zero `timeout` never
    /// waits and never records.
    ///
    /// # Errors
    ///
    /// Returns [`RecvTimeoutError::Timeout`] when no message arrived within
    /// `timeout` while a sender is still connected, and
    /// [`RecvTimeoutError::Disconnected`] when the channel is empty and every
    /// sender has been dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use syncprof::mpsc::{channel, RecvTimeoutError};
    ///
    /// let (tx, rx) = channel::<i32>();
    /// let timeout = Duration::from_millis(10);
    /// assert_eq!(rx.recv_timeout(timeout), Err(RecvTimeoutError::Timeout));
    /// drop(tx);
    /// assert_eq!(rx.recv_timeout(timeout), Err(RecvTimeoutError::Disconnected));
    /// ```
    #[inline]
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        match self.inner.try_recv() {
            Ok(t) => Ok(t),
            Err(TryRecvError::Empty) => {
                let result = self.recv_timeout_blocking(timeout);
                crate::profile::keep_frame();
                result
            }
            Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
        }
    }

    /// The wait of [`recv_timeout`](Self::recv_timeout): std's, timed when
    /// block profiling is on and `timeout` is not zero.
    #[cold]
    #[inline(never)]
    fn recv_timeout_blocking(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        let mark = 0u8;
        let mark = StackMark::of(core::hint::black_box(&mark));
        let start = if timeout.is_zero() {
            None
        } else {
            profile::begin_blocking(EventKind::ChanRecv, Some(self.site), 0, mark)
        };
        let Some(start) = start else {
            return self.inner.recv_timeout(timeout);
        };
        let result = self.inner.recv_timeout(timeout);
        profile::end_blocking(start, EventKind::ChanRecv, Some(self.site), mark);
        result
    }

    /// An iterator that waits for each message and ends when the channel is
    /// empty and every sender has been dropped, as
    /// [`std::sync::mpsc::Receiver::iter`]. Each step that waits is recorded
    /// like [`recv`](Self::recv), with `Iter::next` as the leaf.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::thread;
    /// use syncprof::mpsc::channel;
    ///
    /// let (tx, rx) = channel();
    /// thread::spawn(move || {
    ///     for i in 1..=3 {
    ///         tx.send(i).unwrap();
    ///     }
    /// });
    /// assert_eq!(rx.iter().collect::<Vec<_>>(), [1, 2, 3]);
    /// ```
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { rx: self }
    }

    /// An iterator over the messages already waiting, which never blocks and
    /// ends at the first empty poll, as
    /// [`std::sync::mpsc::Receiver::try_iter`]. Records nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use syncprof::mpsc::channel;
    ///
    /// let (tx, rx) = channel();
    /// tx.send(1).unwrap();
    /// tx.send(2).unwrap();
    /// assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1, 2]);
    /// assert_eq!(rx.try_iter().next(), None); // empty, though tx lives
    /// ```
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { rx: self }
    }
}

impl<T> fmt::Debug for Receiver<T> {
    /// `std`'s format, `Receiver { .. }` (the creation site is in the
    /// profiles, not here).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_have_std_auto_traits_and_sizes() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>() {}
        send_sync::<Sender<u8>>();
        send_sync::<SyncSender<u8>>();
        send::<Receiver<u8>>();
        assert_eq!(size_of::<Sender<u8>>(), size_of::<std_mpsc::Sender<u8>>());
    }

    #[test]
    fn debug_prints_what_std_prints() {
        let (tx, rx) = sync_channel::<u8>(1);
        let (std_tx, std_rx) = std_mpsc::sync_channel::<u8>(1);
        assert_eq!(format!("{tx:?}"), format!("{std_tx:?}"));
        assert_eq!(format!("{rx:?}"), format!("{std_rx:?}"));
        assert_eq!(format!("{:?}", rx.iter()), format!("{:?}", std_rx.iter()));
        assert_eq!(
            format!("{:?}", rx.try_iter()),
            format!("{:?}", std_rx.try_iter())
        );
        assert_eq!(
            format!("{:?}", rx.into_iter()),
            format!("{:?}", std_rx.into_iter())
        );
        let (tx, _rx) = channel::<u8>();
        let (std_tx, _std_rx) = std_mpsc::channel::<u8>();
        assert_eq!(format!("{tx:?}"), format!("{std_tx:?}"));
        assert_eq!(format!("{tx:?}"), "Sender { .. }");
    }
}
