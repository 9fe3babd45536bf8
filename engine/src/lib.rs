//! The engine of [syncprof](https://crates.io/crates/syncprof): its lock
//! state machines (`raw`), the profiler (`profile`: events, the stack table,
//! snapshots and exports), label sets (`labels`), the deadlock detector and
//! the raw locks that `lock_api` wraps (`lock_api_raw`).
//!
//! **Use `syncprof`, not this crate.** It exists so that crates replacing
//! `parking_lot` or `crossbeam-channel` for a whole build (`[patch.crates-io]`,
//! under `compat/` in syncprof's repository) can sit on the same engine and
//! the same global profile as `syncprof` without a dependency cycle: nothing
//! here depends on a crate that can depend on `parking_lot` or
//! `crossbeam-channel` (no tokio, no prometheus-client). Items marked
//! `#[doc(hidden)]` are for syncprof's faces and compat crates and carry no
//! stability promise; the public API is re-exported by `syncprof`, whose
//! documentation is the reference.

#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]
// Internal modules (doc-hidden, for syncprof and the compat crates) link
// their own private items.
#![allow(rustdoc::private_intra_doc_links)]

#[macro_use]
mod macros;

// Under loom the raw locks call the shim's profiler stub, not these.
#[cfg_attr(loom, allow(dead_code, unused_imports))]
pub mod profile;

pub mod labels;

#[doc(hidden)]
pub mod raw;

// Not under loom: `lock_api`'s raw locks need `const INIT`, which loom's
// atomics cannot build.
#[cfg(not(loom))]
#[doc(hidden)]
pub mod lock_api_raw;

#[cfg(feature = "owner-tracking")]
#[cfg_attr(docsrs, doc(cfg(feature = "owner-tracking")))]
pub mod deadlock;

// Not under loom: the channels park through `std::thread`, which loom's
// models do not see.
#[cfg(not(loom))]
#[doc(hidden)]
pub mod crossbeam_channel;

#[cfg(not(loom))]
#[doc(hidden)]
pub mod crossbeam_sync;

pub use profile::rate::{block_rate, mutex_fraction, set_block_rate, set_mutex_fraction};
pub use profile::{set_waiting, waiting_enabled};

/// Hooks for the loom model tests (`--cfg loom` only): the profiler stub's
/// switch, logical clock and totals.
#[cfg(loom)]
#[doc(hidden)]
pub mod __loom {
    use crate::raw::shim::profile as stub;
    use std::sync::atomic::Ordering::SeqCst;

    /// Turns the stub profiler on or off and zeroes its totals.
    pub fn reset(profiling: bool) {
        stub::ON.store(profiling, SeqCst);
        stub::MUTEX_DELAY.store(0, SeqCst);
        stub::MUTEX_EVENTS.store(0, SeqCst);
        stub::BLOCK_EVENTS.store(0, SeqCst);
        stub::PARKS.store(0, SeqCst);
        stub::REQUEUED.store(0, SeqCst);
        stub::QUIET_UNLOCKS.store(0, SeqCst);
        stub::FAST_PAST_PARKED.store(0, SeqCst);
    }

    /// Mutex and RwLock write unlocks that woke nobody though threads were
    /// parked (a waiter woken earlier was to set PARKED_BIT or WP again),
    /// since the last [`reset`].
    pub fn quiet_unlocks() -> u64 {
        stub::QUIET_UNLOCKS.load(SeqCst)
    }

    /// Mutex locks taken on the fast path while threads were parked, since
    /// the last [`reset`].
    pub fn fast_locks_past_parked() -> u64 {
        stub::FAST_PAST_PARKED.load(SeqCst)
    }

    /// Threads the parking model moved from one queue to another (condvar
    /// requeues) since the last [`reset`].
    pub fn requeued() -> u64 {
        stub::REQUEUED.load(SeqCst)
    }

    /// How often the condvar's spin paths were taken, totals of the process
    /// (never reset): waits a notification ended while they spun, waits it
    /// ended as they left the spinners to park, and waiters that met a
    /// second mutex after they released theirs to spin.
    pub fn condvar_spin_paths() -> (u64, u64, u64) {
        (
            stub::SPIN_WAKES.load(SeqCst),
            stub::SPIN_LEFT_NOTIFIED.load(SeqCst),
            stub::SPIN_BAD_MUTEX.load(SeqCst),
        )
    }

    /// RwLock unlocks that handed the lock to a starving waiter, and those
    /// that met one within the gap of the last hand-over and let it compete
    /// instead: totals of the process (never reset).
    pub fn rwlock_hand_off_paths() -> (u64, u64) {
        (
            stub::RW_HAND_OFFS.load(SeqCst),
            stub::RW_HAND_OFFS_REFUSED.load(SeqCst),
        )
    }

    /// Keep-outs of a free RwLock that a reader's timer ended, the woken
    /// writer not having run: a total of the process (never reset).
    pub fn rwlock_keep_outs_ended() -> u64 {
        stub::RW_KEEP_OUTS_ENDED.load(SeqCst)
    }

    /// Calls to the parking model's `park` since the last [`reset`].
    pub fn parks() -> u64 {
        stub::PARKS.load(SeqCst)
    }

    /// Threads parked in the parking model right now, on any key.
    pub fn queued() -> usize {
        crate::raw::shim::loom_queued()
    }

    /// The logical clock.
    pub fn now() -> u64 {
        stub::now()
    }

    /// Sets the fairness bound in logical ticks (`0` restores the default),
    /// so that models reach starvation flags and hand-overs.
    pub fn set_fair_ticks(ticks: usize) {
        crate::raw::charge::set_fair_ticks(ticks);
    }

    /// Installs `hook` to run where `parking_lot_core` may allocate, with the
    /// thread marked inside it: a model of a `#[global_allocator]` that takes
    /// syncprof locks. `None` removes it.
    pub fn set_reentry_hook(hook: Option<fn()>) {
        crate::raw::shim::set_loom_reentry_hook(hook);
    }

    /// The raw rwlock's operations for the parking_lot face (which is not
    /// built under loom: `lock_api` needs `const INIT`): upgradable reads,
    /// upgrades, recursive reads, timed waits and fair unlocks. A timed wait
    /// in the parking model times out unless it was woken before it slept.
    pub struct RawRwLock(crate::raw::rwlock::RawRwLock);

    /// The lock mode of [`RawRwLock::lock`].
    pub use crate::raw::rwlock::Mode;

    impl RawRwLock {
        /// A free lock.
        #[allow(clippy::new_without_default)]
        pub fn new() -> RawRwLock {
            RawRwLock(crate::raw::rwlock::RawRwLock::new())
        }

        /// Takes the lock in `mode`, waiting.
        #[track_caller]
        pub fn lock(&self, mode: Mode) {
            if !self.0.lock_fast(mode) {
                self.0.lock_slow(mode, core::panic::Location::caller());
            }
        }

        /// Takes the lock in `mode` if it is available now.
        pub fn try_lock(&self, mode: Mode) -> bool {
            self.0.try_lock(mode)
        }

        /// Takes the lock in `mode`, or times out (see the type's docs).
        #[track_caller]
        pub fn lock_timed(&self, mode: Mode) -> bool {
            self.0.lock_fast(mode)
                || self.0.lock_slow_until(
                    mode,
                    core::panic::Location::caller(),
                    std::time::Instant::now(),
                )
        }

        /// Releases a read lock (plain or recursive).
        ///
        /// # Safety
        ///
        /// The thread holds a read lock.
        #[track_caller]
        pub unsafe fn unlock_read(&self, fair: bool) {
            let site = core::panic::Location::caller();
            // SAFETY: the caller holds a read lock.
            if !unsafe { self.0.read_unlock_fast() } {
                if fair {
                    self.0.read_unlock_fair_slow(site);
                } else {
                    self.0.read_unlock_slow(site);
                }
            }
        }

        /// Releases the upgradable read lock.
        ///
        /// # Safety
        ///
        /// The thread holds the upgradable read lock.
        #[track_caller]
        pub unsafe fn unlock_upgradable(&self, fair: bool) {
            // SAFETY: the caller holds the upgradable read lock.
            if !unsafe { self.0.upgradable_unlock_fast() } {
                self.0
                    .upgradable_unlock_slow(core::panic::Location::caller(), fair);
            }
        }

        /// Releases the write lock.
        ///
        /// # Safety
        ///
        /// The thread holds the write lock.
        #[track_caller]
        pub unsafe fn unlock_write(&self, fair: bool) {
            let site = core::panic::Location::caller();
            // SAFETY: the caller holds the write lock.
            unsafe {
                if !self.0.write_unlock_fast() {
                    if fair {
                        self.0.write_unlock_fair_slow(site);
                    } else {
                        self.0.write_unlock_slow(site);
                    }
                }
            }
        }

        /// Upgrades the upgradable read lock (waiting; with `timed`, times
        /// out as the type's docs say, keeping the upgradable read lock).
        ///
        /// # Safety
        ///
        /// The thread holds the upgradable read lock.
        #[track_caller]
        pub unsafe fn upgrade(&self, timed: bool) -> bool {
            let deadline = timed.then(std::time::Instant::now);
            // SAFETY: the caller holds the upgradable read lock.
            unsafe {
                self.0.try_upgrade()
                    || self
                        .0
                        .upgrade_slow(core::panic::Location::caller(), deadline)
            }
        }

        /// Upgrades if this thread is the only reader.
        ///
        /// # Safety
        ///
        /// The thread holds the upgradable read lock.
        pub unsafe fn try_upgrade(&self) -> bool {
            // SAFETY: the caller holds the upgradable read lock.
            unsafe { self.0.try_upgrade() }
        }

        /// Write lock to upgradable read lock.
        ///
        /// # Safety
        ///
        /// The thread holds the write lock.
        #[track_caller]
        pub unsafe fn downgrade_to_upgradable(&self) {
            // SAFETY: the caller holds the write lock.
            unsafe {
                self.0
                    .downgrade_to_upgradable(core::panic::Location::caller())
            }
        }

        /// Upgradable read lock to plain read lock.
        ///
        /// # Safety
        ///
        /// The thread holds the upgradable read lock.
        #[track_caller]
        pub unsafe fn downgrade_upgradable(&self) {
            // SAFETY: the caller holds the upgradable read lock.
            unsafe { self.0.downgrade_upgradable(core::panic::Location::caller()) }
        }
    }

    /// The raw mutex's operations for the parking_lot face: timed locks and
    /// fair unlocks (see [`RawRwLock`]).
    pub struct RawMutex(crate::raw::mutex::RawMutex);

    impl RawMutex {
        /// A free mutex.
        #[allow(clippy::new_without_default)]
        pub fn new() -> RawMutex {
            RawMutex(crate::raw::mutex::RawMutex::new())
        }

        /// Takes the lock, waiting.
        #[track_caller]
        pub fn lock(&self) {
            if !self.0.lock_fast() {
                self.0.lock_slow(core::panic::Location::caller());
            }
        }

        /// Takes the lock or times out (see [`RawRwLock`]).
        #[track_caller]
        pub fn lock_timed(&self) -> bool {
            self.0.lock_fast()
                || self
                    .0
                    .lock_slow_until(core::panic::Location::caller(), std::time::Instant::now())
        }

        /// Releases the lock, fairly or not.
        ///
        /// # Safety
        ///
        /// The thread holds the lock.
        #[track_caller]
        pub unsafe fn unlock(&self, fair: bool) {
            // SAFETY: the caller holds the lock.
            if !unsafe { self.0.unlock_fast() } {
                if fair {
                    self.0.unlock_fair_slow(core::panic::Location::caller());
                } else {
                    self.0.unlock_slow(core::panic::Location::caller());
                }
            }
        }
    }

    /// A model of the waiting registry's pool (`src/profile/waiting.rs`):
    /// `slots` thread slots on the heap, driven directly, for
    /// `tests/loom_waiting.rs`.
    pub struct WaitingPool(Vec<crate::profile::waiting::ThreadSlot>);

    /// A wait as a snapshot of a [`WaitingPool`] read it: (kind, lock,
    /// start, stack).
    pub type WaitSeen = (crate::profile::EventKind, usize, u64, Vec<usize>);

    impl WaitingPool {
        /// A pool of `slots` free slots.
        pub fn new(slots: usize) -> WaitingPool {
            WaitingPool(
                (0..slots)
                    .map(|_| crate::profile::waiting::ThreadSlot::new())
                    .collect(),
            )
        }

        /// Claims a free slot for thread `tid`.
        pub fn claim(&self, tid: u64) -> Option<usize> {
            crate::profile::waiting::claim_in(&self.0, tid)
        }

        /// Frees a claimed slot (its entries cleared first).
        pub fn free(&self, slot: usize) {
            crate::profile::waiting::free_in(&self.0[slot]);
        }

        /// Registers a wait in entry `depth` of `slot`; the entry's index.
        pub fn register(
            &self,
            slot: usize,
            depth: usize,
            (kind, lock, start, stack): (crate::profile::EventKind, usize, u64, &[usize]),
        ) -> Option<usize> {
            let wait = crate::profile::waiting::WaitInfo {
                kind,
                site: None,
                lock,
                start,
                stack,
                truncated: false,
            };
            crate::profile::waiting::register_in(&self.0[slot], depth, wait)
        }

        /// Empties entry `entry` of `slot`.
        pub fn deregister(&self, slot: usize, entry: usize) {
            crate::profile::waiting::deregister_in(&self.0[slot], entry);
        }

        /// (slot, tid, innermost wait) of every slot with a wait.
        pub fn snapshot(&self) -> Vec<(usize, u64, Option<WaitSeen>)> {
            crate::profile::waiting::scan_slots(&self.0)
                .into_iter()
                .map(|v| {
                    let wait = v.wait.map(|w| (w.kind, w.lock, w.start, w.addrs));
                    (v.slot, v.tid, wait)
                })
                .collect()
        }
    }

    /// The spin lock of `syncprof::tokio`'s wait queues
    /// (`src/raw/spin.rs`), for `tests/loom_spin.rs`.
    pub struct SpinModel(crate::raw::spin::SpinLock<()>);

    impl Default for SpinModel {
        fn default() -> Self {
            SpinModel(crate::raw::spin::SpinLock::new(()))
        }
    }

    impl SpinModel {
        /// Runs `f` with the lock held.
        pub fn with<R>(&self, f: impl FnOnce() -> R) -> R {
            let _held = self.0.lock();
            f()
        }
    }

    /// (sum of mutex-profile delays, mutex events, block events).
    pub fn totals() -> (u64, u64, u64) {
        (
            stub::MUTEX_DELAY.load(SeqCst),
            stub::MUTEX_EVENTS.load(SeqCst),
            stub::BLOCK_EVENTS.load(SeqCst),
        )
    }
}
