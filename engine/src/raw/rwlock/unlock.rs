//! Unlocking and waking: the slow unlock paths (read, write, downgrade),
//! the wakers of each queue, and the charge they record.

use core::cell::{Cell, RefCell};
use core::hint::black_box;

use super::{
    ONE_READER, READER_PARKED, READERS_MASK, RawRwLock, UPGRADABLE_PARKED, WRITER, WRITER_PARKED,
    WRITER_WAITING, writable,
};
use crate::raw::charge::{self, Charge, QueueScan};
use crate::raw::mutex::{TOKEN_HANDOFF, TOKEN_NORMAL};
use crate::raw::owner;
use crate::raw::shim::profile::{self, EventKind, LockSite, StackMark};
use crate::raw::shim::{
    self, FilterOp,
    Ordering::{Acquire, Relaxed, Release},
    UnparkResult,
};

impl RawRwLock {
    /// Wakes a parked writer after the last read unlock, and charges the
    /// mutex profile on the caller's stack with the waits of the writers and
    /// of the readers still queued behind them.
    #[cold]
    #[inline(never)]
    #[doc(hidden)]
    pub fn read_unlock_slow(&self, site: LockSite) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        self.read_unlock_wake(site, mark, false);
    }

    /// As [`Self::read_unlock_slow`], handing the lock over to the woken
    /// writer (if free) whatever its wait: parking_lot's `unlock_shared_fair`.
    #[cold]
    #[inline(never)]
    #[doc(hidden)]
    pub fn read_unlock_fair_slow(&self, site: LockSite) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        self.read_unlock_wake(site, mark, true);
    }

    /// The body of the read unlocks' slow paths (inlined into them).
    #[inline(always)]
    fn read_unlock_wake(&self, site: LockSite, mark: StackMark, fair: bool) {
        // W with the last reader gone: an upgrade waited for it (or a
        // writer got in since, whose unlock wakes the writers).
        let upgrading = self.state.load(Relaxed) & WRITER != 0;
        if shim::must_defer_wake() {
            // Re-entered from inside `parking_lot_core`: the read lock is
            // released; a writer is woken (uncharged) when this thread
            // leaves it.
            let key = if upgrading {
                self.upgrader_key()
            } else {
                self.writer_key()
            };
            shim::defer_wake(key, false);
            return;
        }
        let profiling = profile::mutex_profiling_on();
        if upgrading {
            let charge = self.wake_upgrader(profiling);
            if charge.delay > 0 || charge.woken > 0 {
                profile::record_mutex(
                    charge.delay,
                    charge.woken,
                    EventKind::RwLockRead,
                    Some(site),
                    mark,
                );
            }
            return;
        }
        let mut charge = self.wake_writer(profiling, fair, true);
        if profiling && self.state.load(Relaxed) & READER_PARKED != 0 {
            charge.add(self.charge_queued_readers());
        }
        if charge.delay > 0 || charge.woken > 0 {
            profile::record_mutex(
                charge.delay,
                charge.woken,
                EventKind::RwLockRead,
                Some(site),
                mark,
            );
        }
    }

    /// Releases the write lock and wakes the waiters (every parked reader,
    /// one parked writer) to compete; charges the mutex profile on the
    /// caller's stack with the waits of those it wakes and of the writers
    /// still queued.
    ///
    /// # Safety
    ///
    /// The calling thread holds the write lock.
    #[cold]
    #[inline(never)]
    #[doc(hidden)]
    pub unsafe fn write_unlock_slow(&self, site: LockSite) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        // SAFETY: as ours.
        unsafe { self.write_unlock_wake(site, mark, false) };
    }

    /// As [`Self::write_unlock_slow`], handing the lock over (if free) to
    /// the parked readers, else to the head writer, whatever their waits:
    /// parking_lot's `unlock_exclusive_fair`.
    ///
    /// # Safety
    ///
    /// The calling thread holds the write lock.
    #[cold]
    #[inline(never)]
    #[doc(hidden)]
    pub unsafe fn write_unlock_fair_slow(&self, site: LockSite) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        // SAFETY: as ours.
        unsafe { self.write_unlock_wake(site, mark, true) };
    }

    /// The body of the write unlocks' slow paths (inlined into them).
    ///
    /// # Safety
    ///
    /// The calling thread holds the write lock.
    #[inline(always)]
    unsafe fn write_unlock_wake(&self, site: LockSite, mark: StackMark, fair: bool) {
        let state = self.state.fetch_and(!WRITER, Release);
        if shim::must_defer_wake() {
            // Re-entered from inside `parking_lot_core`: released; the
            // waiters are woken (uncharged) when this thread leaves it.
            if state & READER_PARKED != 0 {
                shim::defer_wake(self.reader_key(), true);
            }
            if state & UPGRADABLE_PARKED != 0 {
                shim::defer_wake(self.upgradable_key(), false);
            }
            if state & WRITER_PARKED != 0 {
                shim::defer_wake(self.writer_key(), false);
            }
            return;
        }
        let profiling = profile::mutex_profiling_on();
        let mut charge = Charge::default();
        let mut handed = false;
        if state & READER_PARKED != 0 {
            let (readers, got) = self.wake_readers_handing(profiling, fair);
            charge.add(readers);
            handed = got;
        }
        if state & UPGRADABLE_PARKED != 0 {
            charge.add(self.wake_upgradable(profiling));
        }
        if state & WRITER_PARKED != 0 {
            charge.add(self.wake_writer(profiling, fair && !handed, false));
        }
        if charge.delay > 0 || charge.woken > 0 {
            profile::record_mutex(
                charge.delay,
                charge.woken,
                EventKind::RwLockWrite,
                Some(site),
                mark,
            );
        }
    }

    /// The fast path of a downgrade: the write lock becomes one read lock in
    /// one CAS when no reader is parked. On `false` the caller,
    /// `RwLockWriteGuard::downgrade`, calls [`Self::downgrade_slow`].
    ///
    /// # Safety
    ///
    /// The calling thread holds the write lock.
    #[inline(always)]
    #[doc(hidden)]
    pub unsafe fn downgrade_fast(&self) -> bool {
        owner::released(self.reader_key());
        let state = self.state.load(Relaxed);
        state & (READER_PARKED | UPGRADABLE_PARKED) == 0
            && self
                .state
                .compare_exchange(state, (state & !WRITER) + ONE_READER, Release, Relaxed)
                .is_ok()
    }

    /// Turns the write lock into a read lock and wakes the parked readers
    /// to join it; charges the mutex profile with their waits on the
    /// caller's stack.
    ///
    /// # Safety
    ///
    /// The calling thread holds the write lock.
    #[cold]
    #[inline(never)]
    #[doc(hidden)]
    pub unsafe fn downgrade_slow(&self, site: LockSite) {
        let state = self
            .state
            .fetch_add(ONE_READER.wrapping_sub(WRITER), Release);
        if state & (READER_PARKED | UPGRADABLE_PARKED) == 0 {
            return;
        }
        if shim::must_defer_wake() {
            if state & READER_PARKED != 0 {
                shim::defer_wake(self.reader_key(), true);
            }
            if state & UPGRADABLE_PARKED != 0 {
                shim::defer_wake(self.upgradable_key(), false);
            }
            return;
        }
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        let profiling = profile::mutex_profiling_on();
        let mut charge = Charge::default();
        if state & READER_PARKED != 0 {
            charge.add(self.wake_readers(profiling, false));
        }
        if state & UPGRADABLE_PARKED != 0 {
            charge.add(self.wake_upgradable(profiling));
        }
        if charge.delay > 0 || charge.woken > 0 {
            profile::record_mutex(
                charge.delay,
                charge.woken,
                EventKind::RwLockWrite,
                Some(site),
                mark,
            );
        }
    }

    /// Wakes the head writer to compete (or hands it the lock, if it is
    /// starving and the lock is free), charging its wait and the queued
    /// writers' by the N-waiter rule. Clears WP when the queue empties, and
    /// when it wakes a writer to compete while others stay parked (the woken
    /// writer owes it: see the state table).
    ///
    /// WW: with `keep_out` (the readers inside drained for this writer), WW
    /// stays while a woken writer is on its way, so that new readers do not
    /// rush in before it runs; it goes only if nobody was woken. Without
    /// (after a write unlock) WW goes: readers may take the lock during the
    /// woken writer's wake-up, as parking_lot's released writer bit lets
    /// them, and the writer sets WW again when it runs.
    pub(super) fn wake_writer(&self, profiling: bool, fair: bool, keep_out: bool) -> Charge {
        let scan = RefCell::new(QueueScan::default());
        let mut charge = Charge::default();
        let filter = |token| scan.borrow_mut().visit(token, profiling);
        let callback = |result: UnparkResult| {
            let scan = scan.borrow();
            let now = scan.now;
            let mut token = if now == 0 {
                TOKEN_NORMAL
            } else {
                charge::wake_token(now)
            };
            if let Some(head) = scan.head {
                if profiling || charge::is_profiled(head) {
                    charge = Charge {
                        delay: scan.charge(self.writers_charged.get(now), now),
                        woken: u64::from(charge::is_profiled(head)),
                    };
                    self.writers_charged.set(now);
                }
                // A starving writer gets the lock if nobody holds it: taken
                // here, on its behalf, only when free (never promised), and
                // at most once per gap (see `LastHandOff`).
                let starving = charge::should_hand_off(head, now);
                let allowed = starving && self.last_hand_off.allows(now);
                if starving && !allowed {
                    count_hand_off(false, fair);
                }
                if fair || allowed {
                    let more = result.have_more_threads;
                    let taken = self.state.fetch_update(Acquire, Relaxed, |s| {
                        writable(s).then(|| {
                            let s = (s | WRITER) & !WRITER_WAITING;
                            if more { s } else { s & !WRITER_PARKED }
                        })
                    });
                    if taken.is_ok() {
                        token = TOKEN_HANDOFF;
                        self.last_hand_off.set(now);
                        count_hand_off(true, fair);
                    }
                }
            }
            if !result.have_more_threads {
                self.writers_charged.clear();
            }
            if token != TOKEN_HANDOFF {
                // With `keep_out`, WW stays while a woken writer is on its
                // way: it takes the lock (clearing WW) or parks again
                // (setting it). With nobody woken (the writer that set the
                // flags has not parked yet; it will look again), WW goes.
                let mut clear = 0;
                if !result.have_more_threads {
                    clear |= WRITER_PARKED;
                } else if result.unparked_threads > 0 {
                    // Woken to compete while other writers stay parked: the
                    // woken writer sets WP again as it takes the lock or
                    // before it parks again, and until then unlocks wake no
                    // other writer (the Mutex's rule, see its state table).
                    // Waking one per unlock while the last woken was still
                    // on its way, each mostly to find the lock retaken and
                    // park again, made 50%-read ~5 µs sections cost
                    // 1.3-2.1x `std`'s CPU (docs/performance-spins-rwlock.md).
                    clear |= WRITER_PARKED;
                    token = charge::owing_parked(token);
                }
                if !keep_out || result.unparked_threads == 0 {
                    clear |= WRITER_WAITING;
                }
                if clear != 0 {
                    self.state.fetch_and(!clear, Relaxed);
                }
            }
            token
        };
        // SAFETY: the key is this lock's writer queue; the closures neither
        // panic, allocate nor call into the parking lot.
        unsafe { shim::unpark_filter(self.writer_key(), filter, callback) };
        charge
    }

    /// Wakes every parked reader, charging each one's wait exactly (from the
    /// reader queue's last charge), and clears RP. If one of them is
    /// starving and no writer holds the lock, the lock is handed to them all
    /// as readers (taken here, on their behalf, only if free; never
    /// promised); else they compete.
    pub(super) fn wake_readers(&self, profiling: bool, fair: bool) -> Charge {
        self.wake_readers_handing(profiling, fair).0
    }

    /// [`Self::wake_readers`], also saying whether the lock was handed to
    /// them. With `fair`, it is handed over (if no writer holds it) whatever
    /// their waits.
    fn wake_readers_handing(&self, profiling: bool, fair: bool) -> (Charge, bool) {
        let now = Cell::new(0u64);
        let since = Cell::new(None);
        let starving = Cell::new(fair);
        let handed_over = Cell::new(false);
        let mut charge = Charge::default();
        let filter = |token| {
            if now.get() == 0 {
                let tick = profile::now();
                now.set(tick);
                since.set(self.readers_charged.get(tick));
            }
            if charge::should_hand_off(token, now.get()) {
                if self.last_hand_off.allows(now.get()) {
                    starving.set(true);
                } else {
                    count_hand_off(false, fair);
                }
            }
            if profiling || charge::is_profiled(token) {
                charge.add(Charge {
                    delay: charge::uncharged_wait(token, since.get(), now.get()),
                    woken: u64::from(charge::is_profiled(token)),
                });
            }
            FilterOp::Unpark
        };
        let callback = |result: UnparkResult| {
            // Every reader is woken: the queue is empty.
            self.readers_charged.clear();
            let n = result.unparked_threads;
            let handed = starving.get()
                && n > 0
                && self
                    .state
                    .fetch_update(Acquire, Relaxed, |s| {
                        (s & WRITER == 0
                            && (s & READERS_MASK) / ONE_READER + n < READERS_MASK / ONE_READER)
                            .then(|| (s & !READER_PARKED) + n * ONE_READER)
                    })
                    .is_ok();
            if handed {
                handed_over.set(true);
                self.last_hand_off.set(now.get());
                count_hand_off(true, fair);
                return TOKEN_HANDOFF;
            }
            self.state.fetch_and(!READER_PARKED, Relaxed);
            if now.get() == 0 {
                TOKEN_NORMAL
            } else {
                charge::wake_token(now.get())
            }
        };
        // SAFETY: the key is this lock's reader queue; the closures neither
        // panic, allocate nor call into the parking lot.
        unsafe { shim::unpark_filter(self.reader_key(), filter, callback) };
        (charge, handed_over.get())
    }

    /// Charges the waits of the readers that stay parked (behind a starving
    /// writer) up to now, exactly, without waking them; later charges start
    /// there. Counts no contention (none is woken).
    fn charge_queued_readers(&self) -> Charge {
        let now = Cell::new(0u64);
        let since = Cell::new(None);
        let mut delay = 0u64;
        let filter = |token| {
            if now.get() == 0 {
                let tick = profile::now();
                now.set(tick);
                since.set(self.readers_charged.get(tick));
            }
            delay = delay.saturating_add(charge::uncharged_wait(token, since.get(), now.get()));
            FilterOp::Skip
        };
        let callback = |result: UnparkResult| {
            if result.have_more_threads {
                self.readers_charged.set(now.get());
            }
            TOKEN_NORMAL
        };
        // SAFETY: the key is this lock's reader queue; nobody is woken; the
        // closures neither panic, allocate nor call into the parking lot.
        unsafe { shim::unpark_filter(self.reader_key(), filter, callback) };
        Charge { delay, woken: 0 }
    }

    /// Wakes the head upgradable reader to compete (no hand-over: it takes
    /// U itself), charging its wait and the queued ones' by the N-waiter
    /// rule. Clears UP when the queue empties.
    pub(super) fn wake_upgradable(&self, profiling: bool) -> Charge {
        let scan = RefCell::new(QueueScan::default());
        let mut charge = Charge::default();
        let filter = |token| scan.borrow_mut().visit(token, profiling);
        let callback = |result: UnparkResult| {
            let scan = scan.borrow();
            let now = scan.now;
            if let Some(head) = scan.head {
                if profiling || charge::is_profiled(head) {
                    charge = Charge {
                        delay: scan.charge(self.upgradables_charged.get(now), now),
                        woken: u64::from(charge::is_profiled(head)),
                    };
                    self.upgradables_charged.set(now);
                }
            }
            if !result.have_more_threads {
                self.upgradables_charged.clear();
                self.state.fetch_and(!UPGRADABLE_PARKED, Relaxed);
            }
            if now == 0 {
                TOKEN_NORMAL
            } else {
                charge::wake_token(now)
            }
        };
        // SAFETY: the key is this lock's upgradable queue; the closures
        // neither panic, allocate nor call into the parking lot.
        unsafe { shim::unpark_filter(self.upgradable_key(), filter, callback) };
        charge
    }

    /// Wakes the upgrade waiting for the readers to leave (if it parked),
    /// charging its wait since it parked or was last woken.
    fn wake_upgrader(&self, profiling: bool) -> Charge {
        let scan = RefCell::new(QueueScan::default());
        let mut charge = Charge::default();
        let filter = |token| scan.borrow_mut().visit(token, false);
        let callback = |_: UnparkResult| {
            let scan = scan.borrow();
            if let Some(head) = scan.head {
                if profiling || charge::is_profiled(head) {
                    charge = Charge {
                        delay: scan.charge(None, scan.now),
                        woken: u64::from(charge::is_profiled(head)),
                    };
                }
            }
            TOKEN_NORMAL
        };
        // SAFETY: the key is this lock's upgrader queue; the closures
        // neither panic, allocate nor call into the parking lot.
        unsafe { shim::unpark_filter(self.upgrader_key(), filter, callback) };
        charge
    }

    /// Records `charge` (if any) in the mutex profile on the stack above
    /// `mark`.
    #[inline(always)]
    pub(super) fn record(charge: Charge, kind: EventKind, site: LockSite, mark: StackMark) {
        if charge.delay > 0 || charge.woken > 0 {
            profile::record_mutex(charge.delay, charge.woken, kind, Some(site), mark);
        }
    }
}

/// Counts, for the loom models, a hand-over to a starving waiter (`handed`)
/// or one the gap refused (see `LastHandOff`); fair unlocks are not counted.
/// Nothing outside loom.
#[inline(always)]
fn count_hand_off(handed: bool, fair: bool) {
    #[cfg(loom)]
    if !fair {
        let counter = if handed {
            &profile::RW_HAND_OFFS
        } else {
            &profile::RW_HAND_OFFS_REFUSED
        };
        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    #[cfg(not(loom))]
    let _ = (handed, fair);
}
