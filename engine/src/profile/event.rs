//! What an event is: its profile, its kind, its lock site and its flags.

use core::fmt;
use core::panic::Location;

#[cfg(doc)]
use super::waiting;
use crate::labels::Labels;

/// Where a lock (or channel) was created: the `lock` label of its samples.
pub type LockSite = &'static Location<'static>;

/// The two profiles, as in Go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProfileKind {
    /// Where threads waited (Go's `block` profile, `--- contention:`).
    Block = 0,
    /// Who made them wait: contended unlocks charged to the unlocker's stack
    /// (Go's `mutex` profile).
    Mutex = 1,
    /// Who waits right now: one sample per thread blocked in a syncprof
    /// primitive at the snapshot, with how long it has waited so far (see
    /// [`waiting()`]). Not accumulated over time.
    Waiting = 2,
}

impl ProfileKind {
    /// `"block"`, `"mutex"` (the names `net/http/pprof` uses) or
    /// `"waiting"`.
    pub fn name(self) -> &'static str {
        match self {
            ProfileKind::Block => "block",
            ProfileKind::Mutex => "mutex",
            ProfileKind::Waiting => "waiting",
        }
    }
}

/// What kind of wait an event was: the `kind` label of its samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKind {
    /// `Mutex::lock`, or a mutex unlock that woke a waiter.
    Mutex = 0,
    /// `RwLock::read`.
    RwLockRead = 1,
    /// `RwLock::write`.
    RwLockWrite = 2,
    /// `Condvar::wait*` (the wait for a notification).
    Condvar = 3,
    /// `Barrier::wait`.
    Barrier = 4,
    /// `SyncSender::send` on a full channel.
    ChanSend = 5,
    /// `Receiver::recv*` on an empty channel.
    ChanRecv = 6,
    /// `syncprof::tokio::Mutex::lock().await` (and its owned and blocking
    /// forms), or an async mutex guard drop that let a queued task in.
    AsyncMutex = 7,
    /// `syncprof::tokio::RwLock::read().await` (and its forms), or a read
    /// guard drop with tasks queued.
    AsyncRwLockRead = 8,
    /// `syncprof::tokio::RwLock::write().await` (and its forms), or a write
    /// guard drop with tasks queued.
    AsyncRwLockWrite = 9,
    /// `syncprof::tokio::Semaphore::acquire*().await`, or a permit release
    /// with tasks queued.
    Semaphore = 10,
    /// `syncprof::tokio::Notify::notified().await`.
    Notify = 11,
    /// `syncprof::tokio::Barrier::wait().await`.
    AsyncBarrier = 12,
    /// A `syncprof::tokio::sync::mpsc` send (or `reserve`) on a full channel.
    AsyncChanSend = 13,
    /// A `syncprof::tokio::sync::mpsc` receive on an empty channel.
    AsyncChanRecv = 14,
    /// `syncprof::parking_lot::Once::call_once*` (or `wait*`) waiting for
    /// another thread's initialisation to finish.
    Once = 15,
    /// `syncprof::crossbeam::channel`'s `select!`, `select_biased!`,
    /// `Select::select*` or `Select::ready*` when no operation was ready.
    Select = 16,
    /// `syncprof::crossbeam::sync::WaitGroup::wait`.
    WaitGroup = 17,
    /// `syncprof::crossbeam::sync::Parker::park*` (block profile only).
    Park = 18,
}

impl EventKind {
    /// The label value: `mutex`, `rwlock_read`, `rwlock_write`, `condvar`,
    /// `barrier`, `chan_send`, `chan_recv`, and for the async primitives
    /// `async_mutex`, `async_rwlock_read`, `async_rwlock_write`, `semaphore`,
    /// `notify`, `async_barrier`, `async_chan_send`, `async_chan_recv`,
    /// `once` for the parking_lot face's `Once`, and `select`, `waitgroup`,
    /// `park` for the crossbeam face's `select!`, `WaitGroup` and `Parker`.
    pub fn label(self) -> &'static str {
        match self {
            EventKind::Mutex => "mutex",
            EventKind::RwLockRead => "rwlock_read",
            EventKind::RwLockWrite => "rwlock_write",
            EventKind::Condvar => "condvar",
            EventKind::Barrier => "barrier",
            EventKind::ChanSend => "chan_send",
            EventKind::ChanRecv => "chan_recv",
            EventKind::AsyncMutex => "async_mutex",
            EventKind::AsyncRwLockRead => "async_rwlock_read",
            EventKind::AsyncRwLockWrite => "async_rwlock_write",
            EventKind::Semaphore => "semaphore",
            EventKind::Notify => "notify",
            EventKind::AsyncBarrier => "async_barrier",
            EventKind::AsyncChanSend => "async_chan_send",
            EventKind::AsyncChanRecv => "async_chan_recv",
            EventKind::Once => "once",
            EventKind::Select => "select",
            EventKind::WaitGroup => "waitgroup",
            EventKind::Park => "park",
        }
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// An event's labels beyond `kind` and `lock`, part of the bucket key:
///
/// - boolean labels, a small bitset, each bit exported as a pprof string
///   label `name=true` on the samples that have it:
///   - `cancelled`: an async wait whose future was dropped before it was
///     ready (a `tokio::time::timeout` or a `select!` that took another
///     branch); its delay is the time it waited.
///   - `blocking_in_async`: a thread-blocking wait on a thread that was
///     running a tokio runtime worker (feature `tokio`): it stalled every
///     task of that worker.
/// - the user's label set ([`crate::labels`]), interned: the waiter's for a
///   block event, the unlocker's for a mutex event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[doc(hidden)]
pub struct Flags {
    bits: u8,
    labels: Option<Labels>,
}

impl Flags {
    /// No label.
    #[doc(hidden)]
    pub const NONE: Flags = Flags::from_bits(0);
    /// `cancelled=true`.
    #[doc(hidden)]
    pub const CANCELLED: Flags = Flags::from_bits(1);
    /// `blocking_in_async=true`.
    #[doc(hidden)]
    pub const BLOCKING_IN_ASYNC: Flags = Flags::from_bits(2);
    /// Every flag and its label name, in export order.
    const NAMES: [(Flags, &'static str); 2] = [
        (Flags::CANCELLED, "cancelled"),
        (Flags::BLOCKING_IN_ASYNC, "blocking_in_async"),
    ];

    const fn from_bits(bits: u8) -> Flags {
        Flags { bits, labels: None }
    }

    /// The raw bits of the boolean labels (for hashing).
    #[doc(hidden)]
    pub fn bits(self) -> u8 {
        self.bits
    }

    /// Whether every bit of `other` is set here.
    #[doc(hidden)]
    pub fn contains(self, other: Flags) -> bool {
        self.bits & other.bits == other.bits
    }

    /// Both sets of bits, and `other`'s label set if it has one, else ours.
    #[doc(hidden)]
    pub fn with(self, other: Flags) -> Flags {
        Flags {
            bits: self.bits | other.bits,
            labels: other.labels.or(self.labels),
        }
    }

    /// These flags with the user's label set `labels`.
    #[inline]
    #[doc(hidden)]
    pub fn with_labels(self, labels: Option<Labels>) -> Flags {
        Flags { labels, ..self }
    }

    /// The user's label set, if any.
    #[doc(hidden)]
    pub fn labels(self) -> Option<Labels> {
        self.labels
    }

    /// The label names of the bits set, in export order.
    #[doc(hidden)]
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Flags::NAMES
            .into_iter()
            .filter(move |&(flag, _)| self.contains(flag))
            .map(|(_, name)| name)
    }
}
