//! The raw reader-writer lock, on two `parking_lot_core` queues (readers on
//! the lock's address, writers on the address + 1, as in parking_lot's
//! `RawRwLock`).
//!
//! Like the mutex (and parking_lot), an unlock **releases first and then
//! wakes** waiters to compete, rather than handing the lock over while still
//! holding it: a phase change then costs ~50 ns of work instead of waiting
//! out a wake-up, and no unlock ever holds the lock while it is inside
//! `parking_lot_core` (where an allocation may re-enter it, see `shim`).
//! Fairness: a writer that waits keeps new readers out (flag WW, as
//! parking_lot's writer bit does), so a flood of readers cannot starve it:
//! the readers inside drain and the last one out wakes it. It raises WW
//! after one back-off of ~4 µs (see `backoff`): off the lock's line while
//! readers hold it (readers still come in and short sections end), watching
//! the word while a writer holds it (ending when the lock is free); readers
//! that lose a race to other readers back off too, as parking_lot's do.
//! Waiters that have waited longer than the fairness bound (~0.5 ms) get the
//! lock handed over at the next unlock that wakes them, taken in the unpark
//! callback on their behalf only if it is free, at most once per 10 ms per
//! lock (as the mutex does, `LastHandOff`): a
//! starving writer by the last reader out or a write unlock, starving
//! readers (all parked readers at once) by a write unlock. So neither side
//! starves the other for long, and no unlock ever promises a lock it has not
//! released.
//!
//! For the parking_lot face, the same word also carries parking_lot's
//! **upgradable** reads (flag U: one upgradable reader at a time, counted
//! among the readers, excluding writers and other upgradable readers but not
//! plain readers; its waiters park on the address + 2), an **upgrade** in
//! progress (W set while other readers are still inside: new readers stay
//! out, the last one out wakes the upgrader parked on the address + 3),
//! **recursive** reads (parking_lot's `RawRwLock<true>`: a reader may join
//! while readers are inside even if a writer waits), **timed** waits (a
//! waiter that times out leaves its queue, clearing its parked bit if it was
//! the last; a writer that leaves wakes the readers its WW kept out) and
//! **fair** unlocks (the hand-over rule applied whatever the head's wait).

use super::charge::{ChargedUntil, LastHandOff};
use super::owner;
use super::poison;
use super::shim::{
    AtomicBool, AtomicUsize,
    Ordering::{Acquire, Relaxed, Release},
};

mod unlock;
mod upgrade;
mod wait;

/// Held by a writer.
const WRITER: usize = 0b0_0001;
/// Writers are parked (or about to park) on the writer queue.
const WRITER_PARKED: usize = 0b0_0010;
/// Readers are parked (or about to park) on the reader queue.
const READER_PARKED: usize = 0b0_0100;
/// A writer is waiting (spinning, parked, or woken and on its way): new
/// readers stay out, so the readers inside drain and it gets in
/// (parking_lot's writer bit does the same). Set by a writer that finds the
/// lock taken; cleared by a writer that takes the lock, and when the writer
/// queue is found empty.
const WRITER_WAITING: usize = 0b0_1000;
/// Held by an upgradable reader (which is also counted as one reader).
const UPGRADABLE: usize = 0b01_0000;
/// Upgradable readers are parked (or about to park) on their queue.
const UPGRADABLE_PARKED: usize = 0b10_0000;
/// One reader, in the count above the flag bits.
const ONE_READER: usize = 0b100_0000;
const READERS_MASK: usize = !(ONE_READER - 1);

/// A reader-writer lock without data.
#[doc(hidden)]
pub struct RawRwLock {
    /// The lock word: reader count in the high bits, then the flags.
    ///
    /// # State table
    ///
    /// readers | W | Meaning
    /// --------|---|------------------------------------------------------
    ///    0    | 0 | Free (parked bits may be set while woken waiters race).
    ///   n>0   | 0 | Read-locked by n.
    ///    0    | 1 | Write-locked.
    ///   n>0   | 1 | An upgrade waits for the n other readers to leave
    ///         |   | (its thread holds the write claim; U is clear).
    ///
    /// U (with n > 0, W clear): one of the n readers is upgradable. UP: an
    /// upgradable reader is parked; every release of W or U wakes one.
    ///
    /// A reader may join when W and WW are clear; a writer may take the lock
    /// when W and the readers are clear. WP and RP are set by a waiter
    /// before it parks and cleared only under their queue's lock (when it
    /// empties, or, for WP, when an unlock wakes one writer to compete
    /// while others stay parked: the woken writer owes WP, and sets it again
    /// with the lock or before it parks again, as the mutex's woken waiter
    /// owes PARKED_BIT), so a parked thread always has a waker: every unlock
    /// that sees a parked bit wakes that queue (all readers; one writer),
    /// and meanwhile no unlock wakes a second writer. Readers
    /// that starve behind writers get the lock handed to them by a write
    /// unlock (taken in the unpark callback only if no writer holds it), as
    /// a starving writer gets it from an unlock, at most one hand-over per
    /// gap (`last_hand_off`).
    ///
    /// A free lock with WW set keeps readers out for a writer that the last
    /// reader out woke. If that writer has not run within
    /// [`KEEP_OUT_NANOS`](super::hardware::KEEP_OUT_NANOS) (it waits for a
    /// core), the reader holding `keep_out_timer` clears WW and wakes the
    /// readers parked; the writer sets WW again when it runs. Liveness never
    /// rests on WW: it only orders who competes.
    ///
    /// Acquire when taking, Release when giving up.
    state: AtomicUsize,
    /// `std`'s poison flag for the [`RwLock`](crate::sync::RwLock).
    #[doc(hidden)]
    pub poison: poison::Flag,
    /// Last charge to the mutex profile for the writer queue (under its
    /// queue lock).
    writers_charged: ChargedUntil,
    /// Last charge for the reader queue (under its queue lock).
    readers_charged: ChargedUntil,
    /// Last charge for the upgradable readers' queue (under its queue lock).
    upgradables_charged: ChargedUntil,
    /// When the lock last handed itself over to a starving waiter, a writer
    /// or the readers (under the queue lock of either queue): at most one
    /// such hand-over per gap, as the mutex's (see [`LastHandOff`]).
    last_hand_off: LastHandOff,
    /// Held by the one reader that parks with a keep-out timer (rule 6 of
    /// [`hardware`](super::hardware)): set by a compare-exchange before it
    /// parks, cleared when its park returns. Arming a timer costs, so the
    /// other readers kept out park without one.
    keep_out_timer: AtomicBool,
}

/// What a waiter wants.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// A read lock; a waiting writer keeps it out.
    Read,
    /// A read lock that may join readers inside even while a writer waits
    /// (parking_lot's recursive reads).
    RecursiveRead,
    /// An upgradable read lock.
    Upgradable,
    /// The write lock.
    Write,
}

impl Mode {
    /// The state after this mode's acquisition from `state`, if it may take
    /// the lock now.
    #[inline(always)]
    fn take(self, state: usize) -> Option<usize> {
        match self {
            Mode::Read => readable(state).then(|| state + ONE_READER),
            Mode::RecursiveRead => recursive_readable(state).then(|| state + ONE_READER),
            Mode::Upgradable => (readable(state) && state & UPGRADABLE == 0)
                .then(|| state + ONE_READER + UPGRADABLE),
            Mode::Write => writable(state).then_some((state | WRITER) & !WRITER_WAITING),
        }
    }

    /// As [`Self::take`], ignoring WW (for a thread that may not park).
    #[inline(always)]
    fn take_spinning(self, state: usize) -> Option<usize> {
        match self {
            Mode::Write => self.take(state),
            _ => self
                .take(state & !WRITER_WAITING)
                .map(|next| next | (state & WRITER_WAITING)),
        }
    }
}

/// Whether a reader may join a lock in `state`.
#[inline(always)]
fn readable(state: usize) -> bool {
    state & (WRITER | WRITER_WAITING) == 0 && state & READERS_MASK != READERS_MASK
}

/// Whether a recursive reader may join a lock in `state`: no writer holds it,
/// or readers are inside (then a waiting writer or upgrade does not keep it
/// out: the reader may hold a read lock already).
#[inline(always)]
fn recursive_readable(state: usize) -> bool {
    (state & WRITER == 0 || state & READERS_MASK != 0) && state & READERS_MASK != READERS_MASK
}

/// Whether a writer may take a lock in `state`.
#[inline(always)]
fn writable(state: usize) -> bool {
    state & (WRITER | READERS_MASK) == 0
}

impl RawRwLock {
    crate::const_fn! {
        #[doc(hidden)]
        pub fn new() -> RawRwLock {
            RawRwLock {
                state: AtomicUsize::new(0),
                poison: poison::Flag::new(),
                writers_charged: ChargedUntil::new(),
                readers_charged: ChargedUntil::new(),
                upgradables_charged: ChargedUntil::new(),
                last_hand_off: LastHandOff::new(),
                keep_out_timer: AtomicBool::new(false),
            }
        }
    }

    #[inline]
    fn reader_key(&self) -> usize {
        core::ptr::from_ref(self) as usize
    }

    #[inline]
    fn writer_key(&self) -> usize {
        self.reader_key() + 1
    }

    /// The queue of upgradable readers.
    #[inline]
    fn upgradable_key(&self) -> usize {
        self.reader_key() + 2
    }

    /// Where an upgrade waits for the other readers to leave (one thread at
    /// most: the upgradable reader).
    #[inline]
    fn upgrader_key(&self) -> usize {
        self.reader_key() + 3
    }

    /// Takes the lock in `mode` if it may be taken now (never waits).
    #[inline(always)]
    #[doc(hidden)]
    pub fn try_lock(&self, mode: Mode) -> bool {
        let mut state = self.state.load(Relaxed);
        while let Some(next) = mode.take(state) {
            match self
                .state
                .compare_exchange_weak(state, next, Acquire, Relaxed)
            {
                Ok(_) => {
                    if mode == Mode::Write {
                        owner::acquired(self.reader_key());
                    }
                    return true;
                }
                Err(actual) => state = actual,
            }
        }
        false
    }

    /// The fast path of a lock in `mode`: one CAS from the state read.
    #[inline(always)]
    #[doc(hidden)]
    pub fn lock_fast(&self, mode: Mode) -> bool {
        if mode == Mode::Write {
            owner::acquiring();
        }
        let state = self.state.load(Relaxed);
        let locked = match mode.take(state) {
            Some(next) => self
                .state
                .compare_exchange_weak(state, next, Acquire, Relaxed)
                .is_ok(),
            None => false,
        };
        if locked && mode == Mode::Write {
            owner::acquired_fast(self.reader_key());
        }
        locked
    }

    /// Whether any lock is held (a racy snapshot).
    // Used by the parking_lot face, which is not built under loom.
    #[cfg_attr(loom, allow(dead_code))]
    #[inline]
    #[doc(hidden)]
    pub fn is_locked(&self) -> bool {
        self.state.load(Relaxed) & (WRITER | READERS_MASK) != 0
    }

    /// Whether the write lock is held (or an upgrade claims it).
    // Used by the parking_lot face, which is not built under loom.
    #[cfg_attr(loom, allow(dead_code))]
    #[inline]
    #[doc(hidden)]
    pub fn is_locked_exclusive(&self) -> bool {
        self.state.load(Relaxed) & WRITER != 0
    }

    /// Whether threads are parked (or about to park) on any queue (a racy
    /// snapshot, for `bump`).
    // Used by the parking_lot face, which is not built under loom.
    #[cfg_attr(loom, allow(dead_code))]
    #[inline]
    #[doc(hidden)]
    pub fn has_parked(&self) -> bool {
        self.state.load(Relaxed) & (WRITER_PARKED | READER_PARKED | UPGRADABLE_PARKED) != 0
    }

    #[inline(always)]
    #[doc(hidden)]
    pub fn try_read(&self) -> bool {
        let mut state = self.state.load(Relaxed);
        while readable(state) {
            match self
                .state
                .compare_exchange_weak(state, state + ONE_READER, Acquire, Relaxed)
            {
                Ok(_) => return true,
                Err(actual) => state = actual,
            }
        }
        false
    }

    /// The fast path of `read`; on `false` the public method calls
    /// [`Self::read_slow`] itself (see [`RawMutex::lock_fast`](super::mutex::RawMutex::lock_fast)).
    #[inline(always)]
    #[doc(hidden)]
    pub fn read_fast(&self) -> bool {
        let state = self.state.load(Relaxed);
        readable(state)
            && self
                .state
                .compare_exchange_weak(state, state + ONE_READER, Acquire, Relaxed)
                .is_ok()
    }

    #[inline(always)]
    #[doc(hidden)]
    pub fn try_write(&self) -> bool {
        let mut state = self.state.load(Relaxed);
        while state & (WRITER | READERS_MASK) == 0 {
            match self.state.compare_exchange_weak(
                state,
                (state | WRITER) & !WRITER_WAITING,
                Acquire,
                Relaxed,
            ) {
                Ok(_) => {
                    owner::acquired(self.reader_key());
                    return true;
                }
                Err(actual) => state = actual,
            }
        }
        false
    }

    /// The fast path of `write`; on `false` the public method calls
    /// [`Self::write_slow`].
    #[inline(always)]
    #[doc(hidden)]
    pub fn write_fast(&self) -> bool {
        owner::acquiring();
        let locked = self
            .state
            .compare_exchange_weak(0, WRITER, Acquire, Relaxed)
            .is_ok();
        if locked {
            owner::acquired_fast(self.reader_key());
        }
        locked
    }

    /// Releases a read lock: one atomic. Returns `false` when this was the
    /// last reader out while a writer is parked: the caller, the public
    /// guard's `drop`, must then call [`Self::read_unlock_slow`] to wake it.
    ///
    /// # Safety
    ///
    /// The calling thread holds a read lock.
    #[inline(always)]
    #[doc(hidden)]
    pub unsafe fn read_unlock_fast(&self) -> bool {
        let prev = self.state.fetch_sub(ONE_READER, Release);
        // W with readers inside: an upgrade waits for the last one out.
        !(prev & READERS_MASK == ONE_READER && prev & (WRITER_PARKED | WRITER) != 0)
    }

    /// The fast path of the write unlock; on `false` (threads are parked)
    /// the caller calls [`Self::write_unlock_slow`].
    ///
    /// # Safety
    ///
    /// The calling thread holds the write lock.
    #[inline(always)]
    #[doc(hidden)]
    pub unsafe fn write_unlock_fast(&self) -> bool {
        owner::released(self.reader_key());
        let quiet = self
            .state
            .compare_exchange(WRITER, 0, Release, Relaxed)
            .is_ok();
        #[cfg(loom)]
        if quiet && super::shim::loom_queued_now() > 0 {
            super::shim::profile::QUIET_UNLOCKS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        quiet
    }
}
