//! parking_lot's upgradable reads: their unlock, the upgrade to a writer
//! (waiting for the other readers to leave), and the downgrades.

use core::hint::black_box;
use std::time::Instant;

use super::{
    ONE_READER, READER_PARKED, READERS_MASK, RawRwLock, UPGRADABLE, UPGRADABLE_PARKED, WRITER,
    WRITER_PARKED, WRITER_WAITING,
};
use crate::raw::charge::{self, Charge};
use crate::raw::owner;
use crate::raw::shim::profile::{self, EventKind, LockSite, StackMark};
use crate::raw::shim::{
    self,
    Ordering::{Acquire, Relaxed, Release},
    ParkResult, SpinWait,
};

impl RawRwLock {
    /// The fast path of an upgradable unlock: one atomic. On `false` (an
    /// upgradable reader is parked, or this was the last reader out with a
    /// writer parked) the caller calls [`Self::upgradable_unlock_slow`].
    ///
    /// # Safety
    ///
    /// The calling thread holds the upgradable read lock.
    #[inline(always)]
    #[doc(hidden)]
    pub unsafe fn upgradable_unlock_fast(&self) -> bool {
        let prev = self.state.fetch_sub(ONE_READER + UPGRADABLE, Release);
        prev & UPGRADABLE_PARKED == 0
            && !(prev & READERS_MASK == ONE_READER && prev & WRITER_PARKED != 0)
    }

    /// Wakes, after an upgradable unlock, the head upgradable reader, and a
    /// parked writer if no reader is left; charges the mutex profile.
    #[cold]
    #[inline(never)]
    #[doc(hidden)]
    pub fn upgradable_unlock_slow(&self, site: LockSite, fair: bool) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        let state = self.state.load(Relaxed);
        let wake_writer = state & WRITER_PARKED != 0 && state & (WRITER | READERS_MASK) == 0;
        if shim::must_defer_wake() {
            if state & UPGRADABLE_PARKED != 0 {
                shim::defer_wake(self.upgradable_key(), false);
            }
            if wake_writer {
                shim::defer_wake(self.writer_key(), false);
            }
            return;
        }
        let profiling = profile::mutex_profiling_on();
        let mut charge = Charge::default();
        if state & UPGRADABLE_PARKED != 0 {
            charge.add(self.wake_upgradable(profiling));
        }
        if wake_writer {
            charge.add(self.wake_writer(profiling, fair, true));
        }
        Self::record(charge, EventKind::RwLockRead, site, mark);
    }

    /// Upgrades the upgradable read lock to the write lock if this thread is
    /// the only reader: one CAS.
    ///
    /// # Safety
    ///
    /// The calling thread holds the upgradable read lock.
    #[inline(always)]
    #[doc(hidden)]
    pub unsafe fn try_upgrade(&self) -> bool {
        let mut state = self.state.load(Relaxed);
        while state & READERS_MASK == ONE_READER {
            let next = ((state - ONE_READER - UPGRADABLE) | WRITER) & !WRITER_WAITING;
            match self
                .state
                .compare_exchange_weak(state, next, Acquire, Relaxed)
            {
                Ok(_) => {
                    owner::acquired(self.reader_key());
                    return true;
                }
                Err(actual) => state = actual,
            }
        }
        false
    }

    /// Upgrades the upgradable read lock to the write lock, waiting for the
    /// other readers to leave (new ones stay out from now on); records the
    /// wait (kind `rwlock_write`). With a `deadline`, gives up at it (the
    /// thread then holds the upgradable read lock again) and returns
    /// `false`.
    ///
    /// # Safety
    ///
    /// The calling thread holds the upgradable read lock.
    #[cold]
    #[inline(never)]
    #[doc(hidden)]
    pub unsafe fn upgrade_slow(&self, site: LockSite, deadline: Option<Instant>) -> bool {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        // Claim the write lock: U and our read lock become W; the other
        // readers drain and the last one out wakes us.
        let prev = self
            .state
            .fetch_add(WRITER.wrapping_sub(ONE_READER + UPGRADABLE), Acquire);
        if prev & READERS_MASK == ONE_READER {
            owner::acquired_marked(self.reader_key(), mark);
            return true;
        }
        let readers_left = || self.state.load(Acquire) & READERS_MASK == 0;
        if !shim::may_park() {
            while !readers_left() {
                shim::yield_now();
            }
            owner::acquired(self.reader_key());
            return true;
        }
        let mut spin = SpinWait::new();
        let mut block: Option<profile::BlockWait> = None;
        let mut wait_from = 0u64;
        loop {
            if readers_left() {
                break;
            }
            if block.is_none() && spin.spin() {
                continue;
            }
            let now = profile::now();
            if block.is_none() {
                block = profile::begin_block_wait(
                    EventKind::RwLockWrite,
                    Some(site),
                    self.reader_key(),
                    mark,
                );
                wait_from = now;
            }
            let token = charge::park_token(wait_from, profile::mutex_profiling_on(), false);
            // Park while readers are inside: the last one out sees W and
            // wakes this queue after its release (under this queue's lock,
            // so either we see it gone or it sees us queued).
            let validate = || self.state.load(Relaxed) & READERS_MASK != 0;
            // SAFETY: the key is this lock's upgrader queue, where only the
            // upgradable reader parks; the closures neither panic, allocate
            // nor call into the parking lot.
            let result = unsafe {
                shim::park(
                    self.upgrader_key(),
                    validate,
                    || {},
                    |_, _| {},
                    token,
                    deadline,
                )
            };
            match result {
                ParkResult::Unparked(token) => {
                    if let Some(tick) = charge::woken_at(token, profile::now()) {
                        wait_from = tick;
                    }
                }
                ParkResult::Invalid => {}
                ParkResult::TimedOut => {
                    if readers_left() {
                        break;
                    }
                    // Give the claim back: W becomes U and our read lock.
                    self.state
                        .fetch_add((ONE_READER + UPGRADABLE).wrapping_sub(WRITER), Relaxed);
                    self.wake_kept_out();
                    if let Some(wait) = block {
                        profile::end_block_wait(wait);
                    }
                    return false;
                }
            }
        }
        if let Some(wait) = block {
            profile::end_block_wait(wait);
        }
        owner::acquired_marked(self.reader_key(), mark);
        true
    }

    /// Turns the write lock into an upgradable read lock, waking the parked
    /// readers to join it (charged on the caller's stack).
    ///
    /// # Safety
    ///
    /// The calling thread holds the write lock.
    #[inline]
    #[doc(hidden)]
    pub unsafe fn downgrade_to_upgradable(&self, site: LockSite) {
        owner::released(self.reader_key());
        let prev = self
            .state
            .fetch_add((ONE_READER + UPGRADABLE).wrapping_sub(WRITER), Release);
        if prev & READER_PARKED != 0 {
            self.readers_wake_slow(site);
        }
    }

    /// Turns the upgradable read lock into a plain read lock, waking a
    /// parked upgradable reader (charged on the caller's stack).
    ///
    /// # Safety
    ///
    /// The calling thread holds the upgradable read lock.
    #[inline]
    #[doc(hidden)]
    pub unsafe fn downgrade_upgradable(&self, site: LockSite) {
        let prev = self.state.fetch_sub(UPGRADABLE, Release);
        if prev & UPGRADABLE_PARKED != 0 {
            self.upgradable_wake_slow(site);
        }
    }

    /// Wakes the parked readers to compete; records the charge.
    #[cold]
    #[inline(never)]
    fn readers_wake_slow(&self, site: LockSite) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        if shim::must_defer_wake() {
            shim::defer_wake(self.reader_key(), true);
            return;
        }
        let charge = self.wake_readers(profile::mutex_profiling_on(), false);
        Self::record(charge, EventKind::RwLockWrite, site, mark);
    }

    /// Wakes the head upgradable reader to compete; records the charge.
    #[cold]
    #[inline(never)]
    fn upgradable_wake_slow(&self, site: LockSite) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        if shim::must_defer_wake() {
            shim::defer_wake(self.upgradable_key(), false);
            return;
        }
        let charge = self.wake_upgradable(profile::mutex_profiling_on());
        Self::record(charge, EventKind::RwLockRead, site, mark);
    }
}
