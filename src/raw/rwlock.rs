//! The raw reader-writer lock: a phase-fair lock on two `parking_lot_core`
//! queues (readers on the lock's address, writers on the address + 1, as in
//! parking_lot's `RawRwLock`). A queued writer stops new readers, so readers
//! cannot starve writers; a writer's unlock hands the lock to every queued
//! reader before the next writer, so writers cannot starve readers. Slow-path
//! unlocks always hand the lock over, so no waiter is overtaken.

use core::hint::black_box;
use std::time::Instant;

use super::charge::{self, ChargedUntil, QueueScan};
use super::mutex::{TOKEN_HANDOFF, TOKEN_NORMAL};
use super::shim::profile::{self, EventKind, LockSite, StackMark};
use super::shim::{
    self, AtomicUsize, Deferred, FilterOp,
    Ordering::{Acquire, Relaxed, Release},
    ParkResult, SpinWait, UnparkResult,
};
use crate::sync::poison;

/// Held by a writer.
const WRITER: usize = 0b001;
/// Writers are parked (or about to park) on the writer queue. While set, no
/// new reader or writer takes the lock: it is handed to a queued writer.
const WRITER_PARKED: usize = 0b010;
/// Readers are parked (or about to park) on the reader queue.
const READER_PARKED: usize = 0b100;
/// One reader, in the count above the three flag bits.
const ONE_READER: usize = 0b1000;
const READERS_MASK: usize = !(ONE_READER - 1);

/// A reader-writer lock without data.
pub(crate) struct RawRwLock {
    /// The lock word: reader count in the high bits, then `READER_PARKED`,
    /// `WRITER_PARKED`, `WRITER`.
    ///
    /// # State table
    ///
    /// readers | W | WP | RP | Meaning
    /// --------|---|----|----|------------------------------------------------
    ///    0    | 0 | 0  | 0  | Free.
    ///   n>0   | 0 | 0  | *  | Read-locked by n; new readers join.
    ///   n>0   | 0 | 1  | *  | Read-locked, a writer waits: new readers park;
    ///         |   |    |    | the last reader out hands over to a writer.
    ///    0    | 1 | *  | *  | Write-locked; the unlock hands over to every
    ///         |   |    |    | parked reader if RP, else to one writer if WP.
    ///    0    | 0 | 1  | *  | Transient: an unlocker is handing over (it
    ///         |   |    |    | takes the writer queue's lock next).
    ///
    /// WP and RP are only cleared under their queue's lock, so a parked thread
    /// always has a waker. Acquire when taking, Release when giving up.
    state: AtomicUsize,
    /// `std`'s poison flag for the [`RwLock`](crate::sync::RwLock).
    pub(crate) poison: poison::Flag,
    /// Last charge to the mutex profile for the writer queue (under its
    /// queue lock). Readers are all woken at once, so their queue needs none.
    charged_until: ChargedUntil,
}

impl RawRwLock {
    super::const_fn! {
        pub(crate) fn new() -> RawRwLock {
            RawRwLock { state: AtomicUsize::new(0), poison: poison::Flag::new(), charged_until: ChargedUntil::new() }
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

    /// Whether a reader may join a lock in `state`.
    #[inline(always)]
    fn readable(state: usize) -> bool {
        state & (WRITER | WRITER_PARKED) == 0 && state & READERS_MASK != READERS_MASK
    }

    #[inline(always)]
    pub(crate) fn try_read(&self) -> bool {
        let mut state = self.state.load(Relaxed);
        while Self::readable(state) {
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
    pub(crate) fn read_fast(&self) -> bool {
        let state = self.state.load(Relaxed);
        Self::readable(state)
            && self
                .state
                .compare_exchange_weak(state, state + ONE_READER, Acquire, Relaxed)
                .is_ok()
    }

    #[inline(always)]
    pub(crate) fn try_write(&self) -> bool {
        self.state
            .compare_exchange(0, WRITER, Acquire, Relaxed)
            .is_ok()
    }

    /// The fast path of `write`; on `false` the public method calls
    /// [`Self::write_slow`].
    #[inline(always)]
    pub(crate) fn write_fast(&self) -> bool {
        self.state
            .compare_exchange_weak(0, WRITER, Acquire, Relaxed)
            .is_ok()
    }

    /// Releases a read lock: one atomic. Returns `false` when this was the
    /// last reader out while a writer waits: the caller, the public guard's
    /// `drop`, must then call [`Self::read_unlock_slow`] to hand over. (With
    /// WP set no reader joins, so exactly one unlock sees this.)
    ///
    /// # Safety
    ///
    /// The calling thread holds a read lock.
    #[inline(always)]
    pub(crate) unsafe fn read_unlock_fast(&self) -> bool {
        let prev = self.state.fetch_sub(ONE_READER, Release);
        !(prev & READERS_MASK == ONE_READER && prev & WRITER_PARKED != 0)
    }

    /// The fast path of the write unlock; on `false` (threads are parked)
    /// the caller calls [`Self::write_unlock_slow`].
    ///
    /// # Safety
    ///
    /// The calling thread holds the write lock.
    #[inline(always)]
    pub(crate) unsafe fn write_unlock_fast(&self) -> bool {
        self.state
            .compare_exchange(WRITER, 0, Release, Relaxed)
            .is_ok()
    }

    /// Waits for a read lock; records the wait (labelled `site`).
    #[cold]
    #[inline(never)]
    pub(crate) fn read_slow(&self, site: LockSite) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        self.wait(false, site, mark);
    }

    /// Waits for the write lock; records the wait (labelled `site`).
    #[cold]
    #[inline(never)]
    pub(crate) fn write_slow(&self, site: LockSite) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        self.wait(true, site, mark);
    }

    /// The shared body of both waits. Always inlined into its two callers, so
    /// that `mark` is in the frame the public method called.
    #[inline(always)]
    fn wait(&self, writer: bool, site: LockSite, mark: StackMark) {
        if shim::in_parking_lot() {
            // Re-entered from an allocation inside `parking_lot_core`: spin
            // instead of parking (see `shim`), and do not record.
            return self.wait_spinning(writer);
        }
        let (kind, key, parked_bit) = if writer {
            (EventKind::RwLockWrite, self.writer_key(), WRITER_PARKED)
        } else {
            (EventKind::RwLockRead, self.reader_key(), READER_PARKED)
        };
        let mut spin = SpinWait::new();
        let mut first_park: Option<u64> = None;
        let mut block: Option<profile::BlockWait> = None;
        let mut state = self.state.load(Relaxed);
        loop {
            let (free, next) = if writer {
                (
                    state & (WRITER | WRITER_PARKED) == 0 && state & READERS_MASK == 0,
                    state | WRITER,
                )
            } else {
                (Self::readable(state), state.wrapping_add(ONE_READER))
            };
            if free {
                match self
                    .state
                    .compare_exchange_weak(state, next, Acquire, Relaxed)
                {
                    Ok(_) => break,
                    Err(actual) => state = actual,
                }
                continue;
            }
            if !writer && state & (WRITER | WRITER_PARKED) == 0 {
                panic!("too many readers of an RwLock");
            }
            if state & (WRITER_PARKED | READER_PARKED) == 0 && spin.spin() {
                state = self.state.load(Relaxed);
                continue;
            }
            if state & parked_bit == 0 {
                if let Err(actual) =
                    self.state
                        .compare_exchange_weak(state, state | parked_bit, Relaxed, Relaxed)
                {
                    state = actual;
                    continue;
                }
            }
            let now = profile::now();
            let first = *first_park.get_or_insert_with(|| {
                // Capture the stack now, while waiting anyway (see RawMutex).
                block = profile::begin_block_wait(kind, Some(site), mark);
                now
            });
            let token = charge::park_token(
                now,
                profile::mutex_profiling_on(),
                charge::starving(first, now),
            );
            // Park only while someone is bound to wake us: for a writer, WP
            // set means an unlocker will hand over through the writer queue;
            // for a reader, RP set with a writer holding or waiting means a
            // writer's unlock will hand over to the readers.
            let validate = || {
                let s = self.state.load(Relaxed);
                if writer {
                    s & WRITER_PARKED != 0
                } else {
                    s & READER_PARKED != 0 && s & (WRITER | WRITER_PARKED) != 0
                }
            };
            let timed_out = |_, _| unreachable!("lock waits have no timeout");
            // SAFETY: the key is one of this lock's two addresses; the
            // closures neither panic nor call into the parking lot.
            let result =
                unsafe { shim::park(key, validate, || {}, timed_out, token, None::<Instant>) };
            if let ParkResult::Unparked(TOKEN_HANDOFF) = result {
                // We hold the lock: handed over.
                break;
            }
            spin.reset();
            state = self.state.load(Relaxed);
        }
        // One event for the whole wait, however often this thread parked.
        if let Some(wait) = block {
            profile::end_block_wait(wait);
        }
    }

    /// Hands the lock to a waiting writer after the last read unlock, and
    /// charges the mutex profile on the caller's stack.
    #[cold]
    #[inline(never)]
    pub(crate) fn read_unlock_slow(&self, site: LockSite) {
        if shim::in_parking_lot() && shim::defer(Deferred::RwLockReadUnlock(self)) {
            // Re-entered from inside `parking_lot_core`: the hand-over runs
            // (uncharged) when this thread leaves it.
            return;
        }
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        if let Some(delay) = self.read_unlock_hand_over() {
            profile::record_mutex(delay, 1, EventKind::RwLockRead, Some(site), mark);
        }
    }

    /// [`Self::read_unlock_slow`] postponed by the shim: hands over, records
    /// nothing.
    #[cfg_attr(loom, allow(dead_code))] // loom never re-enters the parking model
    pub(crate) fn read_unlock_deferred(&self) {
        let _ = self.read_unlock_hand_over();
    }

    /// The hand-over of the last read unlock; the delay to charge, if any.
    #[inline(always)]
    fn read_unlock_hand_over(&self) -> Option<u64> {
        // Readers are 0 and WP is set: nobody else can take the lock.
        let delay = self.hand_to_writer();
        if self.state.load(Relaxed) & (WRITER | WRITER_PARKED) == 0 {
            // No writer was parked after all (the one that set WP had not yet
            // queued): the lock is free; wake the readers that parked behind
            // WP to compete for it.
            self.wake_readers(false);
        }
        delay
    }

    /// Takes the lock without parking: for a thread inside
    /// `parking_lot_core`, which must not re-enter it.
    #[cold]
    fn wait_spinning(&self, writer: bool) {
        loop {
            let taken = if writer {
                // Unlike `try_write`, also when WP is set: parked writers
                // wait for a hand-over that this thread cannot wait for.
                let state = self.state.load(Relaxed);
                state & (WRITER | READERS_MASK) == 0
                    && self
                        .state
                        .compare_exchange_weak(state, state | WRITER, Acquire, Relaxed)
                        .is_ok()
            } else {
                self.try_read()
            };
            if taken {
                return;
            }
            std::thread::yield_now();
        }
    }

    /// Releases the write lock to waiting readers or a writer, and charges
    /// the mutex profile on the caller's stack.
    ///
    /// # Safety
    ///
    /// The calling thread holds the write lock.
    #[cold]
    #[inline(never)]
    pub(crate) unsafe fn write_unlock_slow(&self, site: LockSite) {
        if shim::in_parking_lot() && shim::defer(Deferred::RwLockWriteUnlock(self)) {
            // Re-entered from inside `parking_lot_core`: the lock stays
            // write-locked until the hand-over runs (uncharged) when this
            // thread leaves it.
            return;
        }
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        // SAFETY: the caller holds the write lock (our precondition).
        let delay = unsafe { self.write_unlock_hand_over() };
        if delay > 0 {
            profile::record_mutex(delay, 1, EventKind::RwLockWrite, Some(site), mark);
        }
    }

    /// The fast path of a downgrade: the write lock becomes one read lock in
    /// one CAS when no reader is parked (a parked writer stays parked: WP
    /// keeps new readers out, and the last reader out hands over to it).
    /// On `false` the caller, `RwLockWriteGuard::downgrade`, calls
    /// [`Self::downgrade_slow`].
    ///
    /// # Safety
    ///
    /// The calling thread holds the write lock.
    #[inline(always)]
    pub(crate) unsafe fn downgrade_fast(&self) -> bool {
        let state = self.state.load(Relaxed);
        state & READER_PARKED == 0
            && self
                .state
                .compare_exchange(state, (state & !WRITER) + ONE_READER, Release, Relaxed)
                .is_ok()
    }

    /// Turns the write lock into a read lock and admits every parked reader
    /// with it, as a write unlock would (phase fairness); charges the mutex
    /// profile with their waits on the caller's stack.
    ///
    /// # Safety
    ///
    /// The calling thread holds the write lock.
    #[cold]
    #[inline(never)]
    pub(crate) unsafe fn downgrade_slow(&self, site: LockSite) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        let mut delay = 0u64;
        loop {
            let state = self.state.load(Relaxed);
            if state & READER_PARKED != 0 && !shim::in_parking_lot() {
                let (handed, charge) = self.wake_readers_joining(true, 1);
                delay = delay.saturating_add(charge);
                if handed {
                    break;
                }
                continue;
            }
            // Inside `parking_lot_core` (see `shim`) parked readers cannot be
            // woken here: they stay parked behind this read lock and are
            // admitted at the next write unlock, or by the last reader out
            // when a writer waits.
            if self
                .state
                .compare_exchange(state, (state & !WRITER) + ONE_READER, Release, Relaxed)
                .is_ok()
            {
                break;
            }
        }
        if delay > 0 {
            profile::record_mutex(delay, 1, EventKind::RwLockWrite, Some(site), mark);
        }
    }

    /// [`Self::write_unlock_slow`] postponed by the shim: hands over,
    /// records nothing.
    ///
    /// # Safety
    ///
    /// The write lock is held on behalf of the deferred unlocker.
    #[cfg_attr(loom, allow(dead_code))] // loom never re-enters the parking model
    pub(crate) unsafe fn write_unlock_deferred(&self) {
        // SAFETY: forwarded.
        let _ = unsafe { self.write_unlock_hand_over() };
    }

    /// Releases the write lock to waiting readers or a writer; returns the
    /// delay to charge.
    ///
    /// # Safety
    ///
    /// The calling thread holds the write lock.
    #[inline(always)]
    unsafe fn write_unlock_hand_over(&self) -> u64 {
        let mut delay = 0u64;
        loop {
            let state = self.state.load(Relaxed);
            if state & READER_PARKED != 0 {
                let (handed, charge) = self.wake_readers(true);
                delay = delay.saturating_add(charge);
                if handed {
                    break;
                }
                continue;
            }
            if state & WRITER_PARKED != 0 {
                if let Some(charge) = self.hand_to_writer() {
                    delay = delay.saturating_add(charge);
                    break;
                }
                // No writer was queued yet; WP is cleared and we still hold
                // the lock: look again.
                continue;
            }
            if self
                .state
                .compare_exchange(state, 0, Release, Relaxed)
                .is_ok()
            {
                break;
            }
        }
        delay
    }

    /// Hands the lock to the head writer, if one is parked, charging its wait
    /// and the queued writers' by the N-waiter rule. The caller holds the
    /// write lock, or the lock is free with WP set (the last reader out).
    /// Returns `Some(delay)` (possibly 0) when a writer took over; `None` when
    /// no writer was queued, after clearing WP (and nothing else).
    fn hand_to_writer(&self) -> Option<u64> {
        let profiling = profile::mutex_profiling_on();
        let scan = core::cell::RefCell::new(QueueScan::default());
        let mut outcome = None;
        let filter = |token| scan.borrow_mut().visit(token, profiling);
        let callback = |result: UnparkResult| {
            let scan = scan.borrow();
            if result.unparked_threads == 0 {
                // Nobody to hand over to (the writer that set WP has not
                // queued yet): drop WP; it will retry.
                self.state.fetch_and(!WRITER_PARKED, Relaxed);
                self.charged_until.clear();
                return TOKEN_NORMAL;
            }
            let now = scan.now;
            let mut delay = 0;
            if let Some(head) = scan.head {
                if profiling || charge::is_profiled(head) {
                    delay = scan.charge(self.charged_until.get(now), now);
                    self.charged_until.set(now);
                }
            }
            outcome = Some(delay);
            let more = result.have_more_threads;
            if !more {
                self.charged_until.clear();
            }
            // The lock passes to the woken writer: W set, WP kept iff more
            // writers wait, RP untouched (readers may set it concurrently).
            let _ = self.state.fetch_update(Release, Relaxed, |s| {
                let s = s | WRITER;
                Some(if more { s } else { s & !WRITER_PARKED })
            });
            TOKEN_HANDOFF
        };
        // SAFETY: the key is this lock's writer queue; the closures neither
        // panic nor call into the parking lot.
        unsafe { shim::unpark_filter(self.writer_key(), filter, callback) };
        outcome
    }

    /// Wakes every parked reader. With `hand_over` (the caller holds the
    /// write lock) the lock passes to them as readers and the return is
    /// `(true, charge)`, or `(false, 0)` after clearing RP if none was
    /// queued. Without, the lock is free and they are woken to compete.
    fn wake_readers(&self, hand_over: bool) -> (bool, u64) {
        self.wake_readers_joining(hand_over, 0)
    }

    /// [`Self::wake_readers`], with `kept` read locks already held by the
    /// caller counted in (1 for a downgrade, 0 for an unlock).
    fn wake_readers_joining(&self, hand_over: bool, kept: usize) -> (bool, u64) {
        let profiling = profile::mutex_profiling_on();
        let now = profile::now();
        let mut delay = 0u64;
        let filter = |token| {
            if profiling || charge::is_profiled(token) {
                // Every reader is woken: each one's wait is known exactly.
                delay = delay.saturating_add(charge::uncharged_wait(token, None, now));
            }
            FilterOp::Unpark
        };
        let mut handed = false;
        let callback = |result: UnparkResult| {
            let n = result.unparked_threads;
            if hand_over && n > 0 {
                handed = true;
                let _ = self.state.fetch_update(Release, Relaxed, |s| {
                    Some((s & WRITER_PARKED) | ((n + kept) * ONE_READER))
                });
                TOKEN_HANDOFF
            } else {
                self.state.fetch_and(!READER_PARKED, Relaxed);
                TOKEN_NORMAL
            }
        };
        // SAFETY: the key is this lock's reader queue; the closures neither
        // panic nor call into the parking lot.
        unsafe { shim::unpark_filter(self.reader_key(), filter, callback) };
        (handed, if handed { delay } else { 0 })
    }
}
