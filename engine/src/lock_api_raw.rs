//! The raw locks of the parking_lot face: `syncprof`'s state machines
//! (`crate::raw`) with their creation site, implementing `lock_api` 0.5's
//! traits as parking_lot 0.13's raw locks do.

use core::num::NonZeroUsize;
use core::panic::Location;
use std::time::{Duration, Instant};

/// The guard state of every raw lock here: `lock_api::GuardNoSend` (a
/// guard is released by the thread that took it, as parking_lot's default),
/// or `lock_api::GuardSend` with feature `send_guard` (parking_lot's
/// feature of that name, which the compat crates forward here; it then
/// holds for `syncprof::parking_lot` too, as one `parking_lot` build's
/// features hold for all its users).
///
/// With `owner-tracking` as well, a guard dropped on another thread than
/// the one that took it leaves its hold recorded on the taking thread until
/// that thread exits: `syncprof::deadlock` may then name it as a holder.
/// parking_lot refuses `send_guard` with `deadlock_detection` for the same
/// reason; the compat crates do too.
/// Whether the guards of these raw locks are `Send` (feature `send_guard`).
#[doc(hidden)]
pub const SEND_GUARD: bool = cfg!(feature = "send_guard");

#[cfg(not(feature = "send_guard"))]
#[doc(hidden)]
pub type GuardMarker = lock_api::GuardNoSend;
#[cfg(feature = "send_guard")]
#[doc(hidden)]
pub type GuardMarker = lock_api::GuardSend;

use crate::profile::{LockSite, keep_frame};
use crate::raw::mutex::RawMutex as Mutex;
use crate::raw::rwlock::{Mode, RawRwLock as RwLock};

mod condvar;
mod pl_condvar;
mod pl_once;
#[doc(hidden)]
pub use condvar::PARKING_LOT_RULES;
pub use condvar::RawCondvar;
pub use pl_condvar::{Condvar, WaitTimeoutResult};
pub use pl_once::{Once, OnceState};

/// The site of a lock built through `lock_api` (`RawMutex::INIT`,
/// `lock_api::Mutex::new`, and so every lock of the parking_lot compat
/// crates): a constant cannot know its user's location, so exports name
/// each sample of such a lock after its own stack's first frame outside the
/// lock wrappers ([`crate::profile::lock_label`]). Locks made by
/// `syncprof::parking_lot::Mutex::new` and the other constructors of this
/// module carry their caller's location instead.
#[doc(hidden)]
pub const LOCK_API_SITE: LockSite = crate::profile::lock_label::UNNAMED;

/// The deadline `timeout` from now; `None` when it cannot be represented
/// (then the wait has no deadline, as parking_lot's).
#[inline]
#[doc(hidden)]
pub fn deadline(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

/// A raw mutex: [`lock_api::RawMutex`] (plain, fair and timed) over syncprof's
/// recording mutex, with the lock's creation site. What
/// `syncprof::parking_lot::Mutex`, `syncprof::parking_lot::ReentrantMutex` and
/// `syncprof::parking_lot::Condvar` are built on; usable as
/// `lock_api::Mutex<syncprof::parking_lot::RawMutex, T>` by crates with their
/// own `lock_api` types (whose samples are then labelled with their own
/// stack's first line outside the lock wrappers, since `INIT` is a
/// constant: see `profile::lock_label`).
pub struct RawMutex {
    #[doc(hidden)]
    pub inner: Mutex,
    #[doc(hidden)]
    pub site: LockSite,
}

impl RawMutex {
    /// An unlocked raw mutex whose samples carry `site` as their `lock`
    /// label.
    #[inline]
    pub const fn with_site(site: &'static Location<'static>) -> RawMutex {
        RawMutex {
            inner: Mutex::new(),
            site,
        }
    }

    /// Waits for the lock until `deadline` (`None`: no deadline).
    #[inline]
    fn lock_until(&self, deadline: Option<Instant>) -> Option<GuardMarker> {
        if self.inner.lock_fast() {
            return Some(GuardMarker::new());
        }
        let taken = match deadline {
            Some(deadline) => self.inner.lock_slow_until(self.site, deadline),
            None => {
                self.inner.lock_slow(self.site);
                true
            }
        };
        keep_frame();
        taken.then(GuardMarker::new)
    }
}

// SAFETY: `crate::raw::mutex::RawMutex` provides mutual exclusion, Acquire
// on every transition that takes it and Release on every one that gives it
// up; the guard state is stateless, and not `Send` unless feature
// `send_guard` asks for it (as parking_lot's): the state machine keys on the
// lock's address, not on a thread, so any thread may release it (owner
// tracking then keeps a stale holder until the lock is taken again, which
// docs/parking_lot.md notes); nothing here unwinds while holding a new
// acquisition.
unsafe impl lock_api::RawMutex for RawMutex {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawMutex = RawMutex::with_site(LOCK_API_SITE);

    type Guard = GuardMarker;

    #[inline]
    fn lock(&self) -> GuardMarker {
        if !self.inner.lock_fast() {
            self.inner.lock_slow(self.site);
            keep_frame();
        }
        GuardMarker::new()
    }

    #[inline]
    fn try_lock(&self) -> Option<GuardMarker> {
        self.inner.try_lock().then(GuardMarker::new)
    }

    #[inline]
    unsafe fn unlock(&self, _guard: GuardMarker) {
        // SAFETY: the caller holds the lock (the trait's precondition).
        if !unsafe { self.inner.unlock_fast() } {
            self.inner.unlock_slow(self.site);
            keep_frame();
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }
}

// SAFETY: as for `RawMutex`; a fair unlock releases and hands the lock over
// to the head waiter only if nobody took it since.
unsafe impl lock_api::RawMutexFair for RawMutex {
    #[inline]
    unsafe fn unlock_fair(&self, _guard: GuardMarker) {
        // SAFETY: the caller holds the lock.
        if !unsafe { self.inner.unlock_fast() } {
            self.inner.unlock_fair_slow(self.site);
            keep_frame();
        }
    }

    #[inline]
    unsafe fn bump(&self, guard: &mut GuardMarker) {
        if self.inner.has_parked() {
            // SAFETY: the caller holds the lock; it holds it again below.
            unsafe { <Self as lock_api::RawMutexFair>::unlock_fair(self, GuardMarker::new()) };
            *guard = <Self as lock_api::RawMutex>::lock(self);
        }
    }
}

// SAFETY: as for `RawMutex`; a timed-out wait holds nothing.
unsafe impl lock_api::RawMutexTimed for RawMutex {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_for(&self, timeout: Duration) -> Option<GuardMarker> {
        self.lock_until(deadline(timeout))
    }

    #[inline]
    fn try_lock_until(&self, timeout: Instant) -> Option<GuardMarker> {
        self.lock_until(Some(timeout))
    }
}

/// A raw fair mutex: every unlock is fair (parking_lot's `RawFairMutex`).
/// What `syncprof::parking_lot::FairMutex` is built on.
pub struct RawFairMutex(#[doc(hidden)] pub RawMutex);

impl RawFairMutex {
    /// An unlocked raw fair mutex labelled `site`.
    #[inline]
    pub const fn with_site(site: &'static Location<'static>) -> RawFairMutex {
        RawFairMutex(RawMutex::with_site(site))
    }
}

// SAFETY: forwards to `RawMutex`, unlocking fairly.
unsafe impl lock_api::RawMutex for RawFairMutex {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawFairMutex = RawFairMutex::with_site(LOCK_API_SITE);

    type Guard = GuardMarker;

    #[inline]
    fn lock(&self) -> GuardMarker {
        if !self.0.inner.lock_fast() {
            self.0.inner.lock_slow(self.0.site);
            keep_frame();
        }
        GuardMarker::new()
    }

    #[inline]
    fn try_lock(&self) -> Option<GuardMarker> {
        lock_api::RawMutex::try_lock(&self.0)
    }

    #[inline]
    unsafe fn unlock(&self, guard: GuardMarker) {
        // SAFETY: the caller holds the lock.
        unsafe { lock_api::RawMutexFair::unlock_fair(&self.0, guard) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.0.inner.is_locked()
    }
}

// SAFETY: forwards to `RawMutex`.
unsafe impl lock_api::RawMutexFair for RawFairMutex {
    #[inline]
    unsafe fn unlock_fair(&self, guard: GuardMarker) {
        // SAFETY: the caller holds the lock.
        unsafe { lock_api::RawMutexFair::unlock_fair(&self.0, guard) }
    }

    #[inline]
    unsafe fn bump(&self, guard: &mut GuardMarker) {
        // SAFETY: the caller holds the lock.
        unsafe { lock_api::RawMutexFair::bump(&self.0, guard) }
    }
}

// SAFETY: forwards to `RawMutex`.
unsafe impl lock_api::RawMutexTimed for RawFairMutex {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_for(&self, timeout: Duration) -> Option<GuardMarker> {
        self.0.lock_until(deadline(timeout))
    }

    #[inline]
    fn try_lock_until(&self, timeout: Instant) -> Option<GuardMarker> {
        self.0.lock_until(Some(timeout))
    }
}

/// A raw reader-writer lock: [`lock_api::RawRwLock`] and its extensions
/// (fair, downgrade, timed, upgrade, upgrade-fair, upgrade-downgrade,
/// upgrade-timed) over syncprof's recording rwlock, with the lock's creation
/// site. With `RECURSIVE`, readers join while readers are inside even if a
/// writer waits (parking_lot 0.13's `RawRwLock<true>`, behind
/// `syncprof::parking_lot::RecursiveRwLock`).
pub struct RawRwLock<const RECURSIVE: bool = false> {
    #[doc(hidden)]
    pub inner: RwLock,
    #[doc(hidden)]
    pub site: LockSite,
}

/// The raw lock of `syncprof::parking_lot::RecursiveRwLock`.
pub type RawRwLockRecursive = RawRwLock<true>;

impl<const RECURSIVE: bool> RawRwLock<RECURSIVE> {
    const READ: Mode = if RECURSIVE {
        Mode::RecursiveRead
    } else {
        Mode::Read
    };

    /// An unlocked raw rwlock labelled `site`.
    #[inline]
    pub const fn with_site(site: &'static Location<'static>) -> Self {
        RawRwLock {
            inner: RwLock::new(),
            site,
        }
    }

    /// Takes the lock in `mode` (a constant at every call site): plain reads
    /// and writes take the very paths of [`crate::RwLock`].
    #[inline(always)]
    fn lock_mode(&self, mode: Mode) {
        match mode {
            Mode::Read => {
                if !self.inner.read_fast() {
                    self.inner.read_slow(self.site);
                    keep_frame();
                }
            }
            Mode::Write => {
                if !self.inner.write_fast() {
                    self.inner.write_slow(self.site);
                    keep_frame();
                }
            }
            _ => {
                if !self.inner.lock_fast(mode) {
                    self.inner.lock_slow(mode, self.site);
                    keep_frame();
                }
            }
        }
    }

    /// Takes a recursive read lock: joins while readers are inside even if
    /// a writer waits (lock_api 0.4's `RawRwLockRecursive`, for the compat
    /// crate `parking_lot` 0.12).
    #[inline]
    #[doc(hidden)]
    pub fn lock_shared_recursive(&self) {
        self.lock_mode(Mode::RecursiveRead);
    }

    /// A recursive read lock if one can be taken now.
    #[inline]
    #[doc(hidden)]
    pub fn try_lock_shared_recursive(&self) -> bool {
        self.inner.try_lock(Mode::RecursiveRead)
    }

    /// A recursive read lock, waiting until `deadline` (`None`: no
    /// deadline); whether it was taken.
    #[inline]
    #[doc(hidden)]
    pub fn try_lock_shared_recursive_until(&self, deadline: Option<Instant>) -> bool {
        self.lock_mode_until(Mode::RecursiveRead, deadline)
    }

    #[inline]
    fn lock_mode_until(&self, mode: Mode, deadline: Option<Instant>) -> bool {
        if self.inner.lock_fast(mode) {
            return true;
        }
        let taken = match deadline {
            Some(deadline) => self.inner.lock_slow_until(mode, self.site, deadline),
            None => {
                self.inner.lock_slow(mode, self.site);
                true
            }
        };
        keep_frame();
        taken
    }

    #[inline(always)]
    unsafe fn unlock_shared_inner(&self, fair: bool) {
        // SAFETY: the caller holds a read lock.
        if !unsafe { self.inner.read_unlock_fast() } {
            if fair {
                self.inner.read_unlock_fair_slow(self.site);
            } else {
                self.inner.read_unlock_slow(self.site);
            }
            keep_frame();
        }
    }

    #[inline(always)]
    unsafe fn unlock_exclusive_inner(&self, fair: bool) {
        // SAFETY: the caller holds the write lock.
        unsafe {
            if !self.inner.write_unlock_fast() {
                if fair {
                    self.inner.write_unlock_fair_slow(self.site);
                } else {
                    self.inner.write_unlock_slow(self.site);
                }
                keep_frame();
            }
        }
    }

    #[inline]
    unsafe fn unlock_upgradable_inner(&self, fair: bool) {
        // SAFETY: the caller holds the upgradable read lock.
        if !unsafe { self.inner.upgradable_unlock_fast() } {
            self.inner.upgradable_unlock_slow(self.site, fair);
            keep_frame();
        }
    }

    /// Upgrades, waiting until `deadline`; on `false` the thread still holds
    /// the upgradable read lock.
    #[inline]
    unsafe fn upgrade_until(&self, deadline: Option<Instant>) -> bool {
        // SAFETY: the caller holds the upgradable read lock.
        unsafe {
            if self.inner.try_upgrade() {
                return true;
            }
            let upgraded = self.inner.upgrade_slow(self.site, deadline);
            keep_frame();
            upgraded
        }
    }
}

// SAFETY: `crate::raw::rwlock::RawRwLock` excludes writers from readers and
// each other, with Acquire on taking and Release on giving up; guard states
// are stateless and not `Send`.
unsafe impl<const RECURSIVE: bool> lock_api::RawRwLock for RawRwLock<RECURSIVE> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = RawRwLock::with_site(LOCK_API_SITE);

    type SharedGuard = GuardMarker;
    type ExclusiveGuard = GuardMarker;

    #[inline]
    fn lock_shared(&self) -> GuardMarker {
        self.lock_mode(Self::READ);
        GuardMarker::new()
    }

    #[inline]
    fn try_lock_shared(&self) -> Option<GuardMarker> {
        self.inner.try_lock(Self::READ).then(GuardMarker::new)
    }

    #[inline]
    unsafe fn unlock_shared(&self, _guard: GuardMarker) {
        // SAFETY: the caller holds a read lock.
        unsafe { self.unlock_shared_inner(false) }
    }

    #[inline]
    fn lock_exclusive(&self) -> GuardMarker {
        self.lock_mode(Mode::Write);
        GuardMarker::new()
    }

    #[inline]
    fn try_lock_exclusive(&self) -> Option<GuardMarker> {
        self.inner.try_write().then(GuardMarker::new)
    }

    #[inline]
    unsafe fn unlock_exclusive(&self, _guard: GuardMarker) {
        // SAFETY: the caller holds the write lock.
        unsafe { self.unlock_exclusive_inner(false) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }

    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        self.inner.is_locked_exclusive()
    }
}

// SAFETY: fair unlocks release, then hand over only a free lock.
unsafe impl<const RECURSIVE: bool> lock_api::RawRwLockFair for RawRwLock<RECURSIVE> {
    #[inline]
    unsafe fn unlock_shared_fair(&self, _guard: GuardMarker) {
        // SAFETY: the caller holds a read lock.
        unsafe { self.unlock_shared_inner(true) }
    }

    #[inline]
    unsafe fn unlock_exclusive_fair(&self, _guard: GuardMarker) {
        // SAFETY: the caller holds the write lock.
        unsafe { self.unlock_exclusive_inner(true) }
    }

    #[inline]
    unsafe fn bump_shared(&self, _guard: &mut GuardMarker) {
        if self.inner.has_parked() {
            // SAFETY: the caller holds a read lock; it holds one again below.
            unsafe { self.unlock_shared_inner(true) };
            self.lock_mode(Self::READ);
        }
    }

    #[inline]
    unsafe fn bump_exclusive(&self, _guard: &mut GuardMarker) {
        if self.inner.has_parked() {
            // SAFETY: the caller holds the write lock; it holds it again.
            unsafe { self.unlock_exclusive_inner(true) };
            self.lock_mode(Mode::Write);
        }
    }
}

// SAFETY: the write lock becomes one read lock atomically.
unsafe impl<const RECURSIVE: bool> lock_api::RawRwLockDowngrade for RawRwLock<RECURSIVE> {
    #[inline]
    unsafe fn downgrade(&self, _guard: GuardMarker) -> GuardMarker {
        // SAFETY: the caller holds the write lock.
        unsafe {
            if !self.inner.downgrade_fast() {
                self.inner.downgrade_slow(self.site);
            }
        }
        GuardMarker::new()
    }
}

// SAFETY: a timed-out wait holds nothing.
unsafe impl<const RECURSIVE: bool> lock_api::RawRwLockTimed for RawRwLock<RECURSIVE> {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_shared_for(&self, timeout: Duration) -> Option<GuardMarker> {
        self.lock_mode_until(Self::READ, deadline(timeout))
            .then(GuardMarker::new)
    }

    #[inline]
    fn try_lock_shared_until(&self, timeout: Instant) -> Option<GuardMarker> {
        self.lock_mode_until(Self::READ, Some(timeout))
            .then(GuardMarker::new)
    }

    #[inline]
    fn try_lock_exclusive_for(&self, timeout: Duration) -> Option<GuardMarker> {
        self.lock_mode_until(Mode::Write, deadline(timeout))
            .then(GuardMarker::new)
    }

    #[inline]
    fn try_lock_exclusive_until(&self, timeout: Instant) -> Option<GuardMarker> {
        self.lock_mode_until(Mode::Write, Some(timeout))
            .then(GuardMarker::new)
    }
}

// SAFETY: one upgradable reader at a time, excluding writers; an upgrade
// holds the write claim until the other readers have left.
unsafe impl<const RECURSIVE: bool> lock_api::RawRwLockUpgrade for RawRwLock<RECURSIVE> {
    type UpgradableGuard = GuardMarker;

    #[inline]
    fn lock_upgradable(&self) -> GuardMarker {
        self.lock_mode(Mode::Upgradable);
        GuardMarker::new()
    }

    #[inline]
    fn try_lock_upgradable(&self) -> Option<GuardMarker> {
        self.inner.try_lock(Mode::Upgradable).then(GuardMarker::new)
    }

    #[inline]
    unsafe fn unlock_upgradable(&self, _guard: GuardMarker) {
        // SAFETY: the caller holds the upgradable read lock.
        unsafe { self.unlock_upgradable_inner(false) }
    }

    #[inline]
    unsafe fn upgrade(&self, _guard: GuardMarker) -> GuardMarker {
        // SAFETY: the caller holds the upgradable read lock.
        unsafe { self.upgrade_until(None) };
        GuardMarker::new()
    }

    #[inline]
    unsafe fn try_upgrade(&self, guard: GuardMarker) -> Result<GuardMarker, GuardMarker> {
        // SAFETY: the caller holds the upgradable read lock.
        if unsafe { self.inner.try_upgrade() } {
            Ok(GuardMarker::new())
        } else {
            Err(guard)
        }
    }
}

// SAFETY: as `RawRwLockUpgrade`, unlocking fairly.
unsafe impl<const RECURSIVE: bool> lock_api::RawRwLockUpgradeFair for RawRwLock<RECURSIVE> {
    #[inline]
    unsafe fn unlock_upgradable_fair(&self, _guard: GuardMarker) {
        // SAFETY: the caller holds the upgradable read lock.
        unsafe { self.unlock_upgradable_inner(true) }
    }

    #[inline]
    unsafe fn bump_upgradable(&self, _guard: &mut GuardMarker) {
        if self.inner.has_parked() {
            // SAFETY: the caller holds the upgradable read lock; it holds it
            // again below.
            unsafe { self.unlock_upgradable_inner(true) };
            self.lock_mode(Mode::Upgradable);
        }
    }
}

// SAFETY: each downgrade changes the held lock atomically.
unsafe impl<const RECURSIVE: bool> lock_api::RawRwLockUpgradeDowngrade for RawRwLock<RECURSIVE> {
    #[inline]
    unsafe fn downgrade_upgradable(&self, _guard: GuardMarker) -> GuardMarker {
        // SAFETY: the caller holds the upgradable read lock.
        unsafe { self.inner.downgrade_upgradable(self.site) };
        GuardMarker::new()
    }

    #[inline]
    unsafe fn downgrade_to_upgradable(&self, _guard: GuardMarker) -> GuardMarker {
        // SAFETY: the caller holds the write lock.
        unsafe { self.inner.downgrade_to_upgradable(self.site) };
        GuardMarker::new()
    }
}

// SAFETY: a timed-out wait holds nothing; a timed-out upgrade holds the
// upgradable read lock again.
unsafe impl<const RECURSIVE: bool> lock_api::RawRwLockUpgradeTimed for RawRwLock<RECURSIVE> {
    #[inline]
    fn try_lock_upgradable_for(&self, timeout: Duration) -> Option<GuardMarker> {
        self.lock_mode_until(Mode::Upgradable, deadline(timeout))
            .then(GuardMarker::new)
    }

    #[inline]
    fn try_lock_upgradable_until(&self, timeout: Instant) -> Option<GuardMarker> {
        self.lock_mode_until(Mode::Upgradable, Some(timeout))
            .then(GuardMarker::new)
    }

    #[inline]
    unsafe fn try_upgrade_for(
        &self,
        guard: GuardMarker,
        timeout: Duration,
    ) -> Result<GuardMarker, GuardMarker> {
        // SAFETY: the caller holds the upgradable read lock.
        if unsafe { self.upgrade_until(deadline(timeout)) } {
            Ok(GuardMarker::new())
        } else {
            Err(guard)
        }
    }

    #[inline]
    unsafe fn try_upgrade_until(
        &self,
        guard: GuardMarker,
        timeout: Instant,
    ) -> Result<GuardMarker, GuardMarker> {
        // SAFETY: the caller holds the upgradable read lock.
        if unsafe { self.upgrade_until(Some(timeout)) } {
            Ok(GuardMarker::new())
        } else {
            Err(guard)
        }
    }
}

/// The thread id of `syncprof::parking_lot::ReentrantMutex`: the address
/// of a thread-local (parking_lot's `RawThreadId`).
pub struct RawThreadId;

// SAFETY: a thread-local's address is unique among live threads and nonzero.
unsafe impl lock_api::GetThreadId for RawThreadId {
    const INIT: RawThreadId = RawThreadId;

    #[inline]
    fn nonzero_thread_id(&self) -> NonZeroUsize {
        thread_local!(static KEY: u8 = const { 0 });
        KEY.with(|key| NonZeroUsize::new(core::ptr::from_ref(key).addr()))
            .expect("a thread-local's address is not null")
    }
}
