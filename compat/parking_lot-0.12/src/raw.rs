//! parking_lot 0.12's raw locks: newtypes over the engine's lock_api 0.5 raw
//! locks (`syncprof_engine::lock_api_raw`) implementing lock_api 0.4's
//! traits by delegation. lock_api 0.5 hands out a guard state on every
//! acquisition and takes it back on release; the engine's is a zero-sized
//! marker, so an acquisition drops it ([`discard`]) and a release makes a new
//! one.

use core::num::NonZeroUsize;
use core::panic::Location;
use std::time::{Duration, Instant};

use lock_api05::{
    RawMutex as _, RawMutexFair as _, RawMutexTimed as _, RawRwLock as _, RawRwLockDowngrade as _,
    RawRwLockFair as _, RawRwLockTimed as _, RawRwLockUpgrade as _, RawRwLockUpgradeDowngrade as _,
    RawRwLockUpgradeFair as _, RawRwLockUpgradeTimed as _,
};
use syncprof_engine::lock_api_raw as engine;

/// The guard state the engine's raw locks take back on release (zero-sized,
/// no `Drop`).
type EngineGuard = engine::GuardMarker;

// The guard state carries nothing: making one anew loses nothing.
const _: () = assert!(size_of::<EngineGuard>() == 0 && !core::mem::needs_drop::<EngineGuard>());

/// The guard state a release hands back to the engine.
#[inline(always)]
fn engine_guard() -> EngineGuard {
    EngineGuard::new()
}

/// Drops the guard state an acquisition returned (zero-sized, no `Drop`).
#[inline(always)]
fn discard(_state: EngineGuard) {}

/// Whether the guards of this crate's locks are `Send` (feature
/// `send_guard`, as parking_lot's).
#[cfg(feature = "send_guard")]
type GuardMarker = lock_api::GuardSend;
#[cfg(not(feature = "send_guard"))]
type GuardMarker = lock_api::GuardNoSend;

/// Raw mutex type backed by syncprof's recording mutex (parking_lot's
/// `RawMutex`): the engine's, with lock_api 0.4's traits.
pub struct RawMutex(pub(crate) engine::RawMutex);

impl RawMutex {
    /// An unlocked raw mutex whose samples carry `site` as their `lock`
    /// label (an addition: `INIT` labels every lock with one line of
    /// syncprof-engine's source).
    #[inline]
    pub const fn with_site(site: &'static Location<'static>) -> RawMutex {
        RawMutex(engine::RawMutex::with_site(site))
    }

    /// The engine's raw mutex inside, for a condvar wait.
    #[inline(always)]
    pub(crate) fn engine(&self) -> &engine::RawMutex {
        &self.0
    }
}

// SAFETY: every method forwards to the engine's raw mutex, which implements
// lock_api 0.5's `RawMutex` (mutual exclusion, Acquire on taking, Release on
// giving up); its guard state is a zero-sized marker without `Drop`, so
// dropping one on acquisition and making one on release loses nothing.
unsafe impl lock_api::RawMutex for RawMutex {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawMutex = RawMutex(engine::RawMutex::INIT);

    type GuardMarker = GuardMarker;

    #[inline]
    fn lock(&self) {
        discard(self.0.lock());
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.0.try_lock().map(discard).is_some()
    }

    #[inline]
    unsafe fn unlock(&self) {
        // SAFETY: the caller holds the lock (the trait's precondition).
        unsafe { self.0.unlock(engine_guard()) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.0.is_locked()
    }
}

// SAFETY: forwards to the engine's `RawMutexFair`.
unsafe impl lock_api::RawMutexFair for RawMutex {
    #[inline]
    unsafe fn unlock_fair(&self) {
        // SAFETY: the caller holds the lock.
        unsafe { self.0.unlock_fair(engine_guard()) }
    }

    #[inline]
    unsafe fn bump(&self) {
        // SAFETY: the caller holds the lock; it holds it again on return.
        unsafe { self.0.bump(&mut engine_guard()) }
    }
}

// SAFETY: forwards to the engine's `RawMutexTimed`.
unsafe impl lock_api::RawMutexTimed for RawMutex {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_for(&self, timeout: Duration) -> bool {
        self.0.try_lock_for(timeout).map(discard).is_some()
    }

    #[inline]
    fn try_lock_until(&self, timeout: Instant) -> bool {
        self.0.try_lock_until(timeout).map(discard).is_some()
    }
}

/// Raw fair mutex type (parking_lot's `RawFairMutex`): every unlock is
/// fair.
pub struct RawFairMutex(pub(crate) engine::RawFairMutex);

impl RawFairMutex {
    /// An unlocked raw fair mutex labelled `site`.
    #[inline]
    pub const fn with_site(site: &'static Location<'static>) -> RawFairMutex {
        RawFairMutex(engine::RawFairMutex::with_site(site))
    }
}

// SAFETY: forwards to the engine's raw fair mutex (see `RawMutex`).
unsafe impl lock_api::RawMutex for RawFairMutex {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawFairMutex = RawFairMutex(engine::RawFairMutex::INIT);

    type GuardMarker = GuardMarker;

    #[inline]
    fn lock(&self) {
        discard(self.0.lock());
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.0.try_lock().map(discard).is_some()
    }

    #[inline]
    unsafe fn unlock(&self) {
        // SAFETY: the caller holds the lock.
        unsafe { self.0.unlock(engine_guard()) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.0.is_locked()
    }
}

// SAFETY: forwards to the engine's `RawMutexFair`.
unsafe impl lock_api::RawMutexFair for RawFairMutex {
    #[inline]
    unsafe fn unlock_fair(&self) {
        // SAFETY: the caller holds the lock.
        unsafe { self.0.unlock_fair(engine_guard()) }
    }

    #[inline]
    unsafe fn bump(&self) {
        // SAFETY: the caller holds the lock; it holds it again on return.
        unsafe { self.0.bump(&mut engine_guard()) }
    }
}

// SAFETY: forwards to the engine's `RawMutexTimed`.
unsafe impl lock_api::RawMutexTimed for RawFairMutex {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_for(&self, timeout: Duration) -> bool {
        self.0.try_lock_for(timeout).map(discard).is_some()
    }

    #[inline]
    fn try_lock_until(&self, timeout: Instant) -> bool {
        self.0.try_lock_until(timeout).map(discard).is_some()
    }
}

/// Raw reader-writer lock type backed by syncprof's recording rwlock
/// (parking_lot's `RawRwLock`): plain, fair, downgrade, timed, recursive,
/// upgradable.
pub struct RawRwLock(pub(crate) engine::RawRwLock);

impl RawRwLock {
    /// An unlocked raw rwlock labelled `site`.
    #[inline]
    pub const fn with_site(site: &'static Location<'static>) -> RawRwLock {
        RawRwLock(engine::RawRwLock::with_site(site))
    }
}

// SAFETY: forwards to the engine's raw rwlock (lock_api 0.5's `RawRwLock`:
// writers exclude readers and each other, Acquire on taking, Release on
// giving up); guard states as for `RawMutex`.
unsafe impl lock_api::RawRwLock for RawRwLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawRwLock = RawRwLock(engine::RawRwLock::INIT);

    type GuardMarker = GuardMarker;

    #[inline]
    fn lock_shared(&self) {
        discard(self.0.lock_shared());
    }

    #[inline]
    fn try_lock_shared(&self) -> bool {
        self.0.try_lock_shared().map(discard).is_some()
    }

    #[inline]
    unsafe fn unlock_shared(&self) {
        // SAFETY: the caller holds a read lock.
        unsafe { self.0.unlock_shared(engine_guard()) }
    }

    #[inline]
    fn lock_exclusive(&self) {
        discard(self.0.lock_exclusive());
    }

    #[inline]
    fn try_lock_exclusive(&self) -> bool {
        self.0.try_lock_exclusive().map(discard).is_some()
    }

    #[inline]
    unsafe fn unlock_exclusive(&self) {
        // SAFETY: the caller holds the write lock.
        unsafe { self.0.unlock_exclusive(engine_guard()) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.0.is_locked()
    }

    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        self.0.is_locked_exclusive()
    }
}

// SAFETY: forwards to the engine's `RawRwLockFair`.
unsafe impl lock_api::RawRwLockFair for RawRwLock {
    #[inline]
    unsafe fn unlock_shared_fair(&self) {
        // SAFETY: the caller holds a read lock.
        unsafe { self.0.unlock_shared_fair(engine_guard()) }
    }

    #[inline]
    unsafe fn unlock_exclusive_fair(&self) {
        // SAFETY: the caller holds the write lock.
        unsafe { self.0.unlock_exclusive_fair(engine_guard()) }
    }

    #[inline]
    unsafe fn bump_shared(&self) {
        // SAFETY: the caller holds a read lock; it holds one again on return.
        unsafe { self.0.bump_shared(&mut engine_guard()) }
    }

    #[inline]
    unsafe fn bump_exclusive(&self) {
        // SAFETY: the caller holds the write lock; it holds it again.
        unsafe { self.0.bump_exclusive(&mut engine_guard()) }
    }
}

// SAFETY: forwards to the engine's `RawRwLockDowngrade`.
unsafe impl lock_api::RawRwLockDowngrade for RawRwLock {
    #[inline]
    unsafe fn downgrade(&self) {
        // SAFETY: the caller holds the write lock.
        discard(unsafe { self.0.downgrade(engine_guard()) });
    }
}

// SAFETY: forwards to the engine's `RawRwLockTimed`.
unsafe impl lock_api::RawRwLockTimed for RawRwLock {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_shared_for(&self, timeout: Duration) -> bool {
        self.0.try_lock_shared_for(timeout).map(discard).is_some()
    }

    #[inline]
    fn try_lock_shared_until(&self, timeout: Instant) -> bool {
        self.0.try_lock_shared_until(timeout).map(discard).is_some()
    }

    #[inline]
    fn try_lock_exclusive_for(&self, timeout: Duration) -> bool {
        self.0
            .try_lock_exclusive_for(timeout)
            .map(discard)
            .is_some()
    }

    #[inline]
    fn try_lock_exclusive_until(&self, timeout: Instant) -> bool {
        self.0
            .try_lock_exclusive_until(timeout)
            .map(discard)
            .is_some()
    }
}

// SAFETY: a recursive read is a read lock that joins readers inside even if
// a writer waits (the engine's `Mode::RecursiveRead`); released as a read.
unsafe impl lock_api::RawRwLockRecursive for RawRwLock {
    #[inline]
    fn lock_shared_recursive(&self) {
        self.0.lock_shared_recursive();
    }

    #[inline]
    fn try_lock_shared_recursive(&self) -> bool {
        self.0.try_lock_shared_recursive()
    }
}

// SAFETY: as `RawRwLockRecursive`; a timed-out wait holds nothing.
unsafe impl lock_api::RawRwLockRecursiveTimed for RawRwLock {
    #[inline]
    fn try_lock_shared_recursive_for(&self, timeout: Duration) -> bool {
        self.0
            .try_lock_shared_recursive_until(engine::deadline(timeout))
    }

    #[inline]
    fn try_lock_shared_recursive_until(&self, timeout: Instant) -> bool {
        self.0.try_lock_shared_recursive_until(Some(timeout))
    }
}

// SAFETY: forwards to the engine's `RawRwLockUpgrade`.
unsafe impl lock_api::RawRwLockUpgrade for RawRwLock {
    #[inline]
    fn lock_upgradable(&self) {
        discard(self.0.lock_upgradable());
    }

    #[inline]
    fn try_lock_upgradable(&self) -> bool {
        self.0.try_lock_upgradable().map(discard).is_some()
    }

    #[inline]
    unsafe fn unlock_upgradable(&self) {
        // SAFETY: the caller holds the upgradable read lock.
        unsafe { self.0.unlock_upgradable(engine_guard()) }
    }

    #[inline]
    unsafe fn upgrade(&self) {
        // SAFETY: the caller holds the upgradable read lock.
        discard(unsafe { self.0.upgrade(engine_guard()) });
    }

    #[inline]
    unsafe fn try_upgrade(&self) -> bool {
        // SAFETY: the caller holds the upgradable read lock.
        unsafe { self.0.try_upgrade(engine_guard()) }
            .map(discard)
            .is_ok()
    }
}

// SAFETY: forwards to the engine's `RawRwLockUpgradeFair`.
unsafe impl lock_api::RawRwLockUpgradeFair for RawRwLock {
    #[inline]
    unsafe fn unlock_upgradable_fair(&self) {
        // SAFETY: the caller holds the upgradable read lock.
        unsafe { self.0.unlock_upgradable_fair(engine_guard()) }
    }

    #[inline]
    unsafe fn bump_upgradable(&self) {
        // SAFETY: the caller holds the upgradable read lock; it holds it
        // again on return.
        unsafe { self.0.bump_upgradable(&mut engine_guard()) }
    }
}

// SAFETY: forwards to the engine's `RawRwLockUpgradeDowngrade`.
unsafe impl lock_api::RawRwLockUpgradeDowngrade for RawRwLock {
    #[inline]
    unsafe fn downgrade_upgradable(&self) {
        // SAFETY: the caller holds the upgradable read lock.
        discard(unsafe { self.0.downgrade_upgradable(engine_guard()) });
    }

    #[inline]
    unsafe fn downgrade_to_upgradable(&self) {
        // SAFETY: the caller holds the write lock.
        discard(unsafe { self.0.downgrade_to_upgradable(engine_guard()) });
    }
}

// SAFETY: forwards to the engine's `RawRwLockUpgradeTimed`; a timed-out
// upgrade still holds the upgradable read lock (the engine returns its
// guard state, dropped here).
unsafe impl lock_api::RawRwLockUpgradeTimed for RawRwLock {
    #[inline]
    fn try_lock_upgradable_for(&self, timeout: Duration) -> bool {
        self.0
            .try_lock_upgradable_for(timeout)
            .map(discard)
            .is_some()
    }

    #[inline]
    fn try_lock_upgradable_until(&self, timeout: Instant) -> bool {
        self.0
            .try_lock_upgradable_until(timeout)
            .map(discard)
            .is_some()
    }

    #[inline]
    unsafe fn try_upgrade_for(&self, timeout: Duration) -> bool {
        // SAFETY: the caller holds the upgradable read lock.
        let upgraded = unsafe { self.0.try_upgrade_for(engine_guard(), timeout) };
        upgraded.map(discard).map_err(discard).is_ok()
    }

    #[inline]
    unsafe fn try_upgrade_until(&self, timeout: Instant) -> bool {
        // SAFETY: the caller holds the upgradable read lock.
        let upgraded = unsafe { self.0.try_upgrade_until(engine_guard(), timeout) };
        upgraded.map(discard).map_err(discard).is_ok()
    }
}

/// Implementation of the `GetThreadId` trait for `lock_api::ReentrantMutex`
/// (parking_lot's `RawThreadId`): the engine's.
pub struct RawThreadId;

// SAFETY: forwards to the engine's `RawThreadId` (a thread-local's
// address: unique among live threads, nonzero).
unsafe impl lock_api::GetThreadId for RawThreadId {
    const INIT: RawThreadId = RawThreadId;

    #[inline]
    fn nonzero_thread_id(&self) -> NonZeroUsize {
        lock_api05::GetThreadId::nonzero_thread_id(&engine::RawThreadId)
    }
}
