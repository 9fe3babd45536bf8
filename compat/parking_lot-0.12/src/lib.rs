//! parking_lot 0.12.5's API, item for item, on syncprof's recording locks.
//!
//! This crate is named `parking_lot` so that a build can replace the real
//! one everywhere, its dependencies' uses included (prometheus-client and
//! tokio's `parking_lot` feature ask for 0.12):
//!
//! ```toml
//! [patch.crates-io]
//! parking_lot = { path = "…/syncprof/compat/parking_lot-0.12" }
//! ```
//!
//! Every lock then records Go-style block and mutex contention profiles into
//! the one global profile that `syncprof` exports. It holds no lock logic:
//! the types are parking_lot's aliases of `lock_api` 0.4's wrappers, whose
//! raw locks ([`RawMutex`], [`RawFairMutex`], [`RawRwLock`]) are newtypes
//! over `syncprof-engine`'s lock_api 0.5 raw locks, implementing lock_api
//! 0.4's traits by delegation. It does not depend on `syncprof`.
//!
//! # Differences from parking_lot 0.12
//!
//! - Locks made through `new` (a `const fn` over `RawMutex::INIT`) share one
//!   `lock` label, a line of syncprof-engine's source; `const_mutex`,
//!   `const_fair_mutex`, `const_rwlock`, `const_reentrant_mutex` and
//!   [`Condvar::new`] label theirs with their caller's location
//!   (`#[track_caller]`), as does the addition `RawMutex::with_site`.
//! - [`Once`] and [`OnceState`] are `syncprof::parking_lot`'s (parking_lot
//!   0.13's API, a superset of 0.12's: also `is_completed`, `wait`, …).
//! - Sizes and fairness are syncprof's (see `syncprof::parking_lot`).
//! - `deadlock` (feature `deadlock_detection`): syncprof's detector; see
//!   [`deadlock::DeadlockedThread`] for what differs.
//! - Features `hardware-lock-elision` and `nightly` (beyond lock_api's) do
//!   nothing.
//!
//! # Examples
//!
//! ```
//! use parking_lot::{Mutex, RwLock};
//!
//! let m = Mutex::new(1);
//! *m.lock() += 1;
//! let rw = RwLock::new(*m.lock());
//! assert_eq!(*rw.read(), 2);
//! ```

// syncprof's loom models build every dev-dependency of syncprof with
// `--cfg loom`, where the engine has no lock_api raw locks (their `const
// INIT` needs real atomics): this crate is then empty.
#![cfg(not(loom))]
#![warn(missing_docs)]

// parking_lot refuses these together: a guard sent to another thread would
// leave its hold recorded on the thread that took it.
#[cfg(all(feature = "send_guard", feature = "deadlock_detection"))]
compile_error!("the `send_guard` and `deadlock_detection` features cannot be used together");

use core::panic::Location;

mod condvar;
mod raw;

pub use condvar::{Condvar, WaitTimeoutResult};
pub use raw::{RawFairMutex, RawMutex, RawRwLock, RawThreadId};
pub use syncprof_engine::lock_api_raw::{Once, OnceState};

pub use ::lock_api;

/// A mutual exclusion primitive (parking_lot's `Mutex`).
pub type Mutex<T> = lock_api::Mutex<RawMutex, T>;

/// Creates a new mutex in an unlocked state ready for use, labelled with
/// the caller's location (usable in a `static`).
#[track_caller]
pub const fn const_mutex<T>(val: T) -> Mutex<T> {
    Mutex::const_new(RawMutex::with_site(Location::caller()), val)
}

/// An RAII guard of a [`Mutex`].
pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, RawMutex, T>;
/// A [`MutexGuard`] mapped to a part of the data.
pub type MappedMutexGuard<'a, T> = lock_api::MappedMutexGuard<'a, RawMutex, T>;

/// A mutex whose every unlock is fair (parking_lot's `FairMutex`).
pub type FairMutex<T> = lock_api::Mutex<RawFairMutex, T>;

/// Creates a new fair mutex in an unlocked state ready for use, labelled
/// with the caller's location.
#[track_caller]
pub const fn const_fair_mutex<T>(val: T) -> FairMutex<T> {
    FairMutex::const_new(RawFairMutex::with_site(Location::caller()), val)
}

/// An RAII guard of a [`FairMutex`].
pub type FairMutexGuard<'a, T> = lock_api::MutexGuard<'a, RawFairMutex, T>;
/// A [`FairMutexGuard`] mapped to a part of the data.
pub type MappedFairMutexGuard<'a, T> = lock_api::MappedMutexGuard<'a, RawFairMutex, T>;

/// A mutex the thread holding it may lock again (parking_lot's
/// `ReentrantMutex`).
pub type ReentrantMutex<T> = lock_api::ReentrantMutex<RawMutex, RawThreadId, T>;

/// Creates a new reentrant mutex in an unlocked state ready for use,
/// labelled with the caller's location.
#[track_caller]
pub const fn const_reentrant_mutex<T>(val: T) -> ReentrantMutex<T> {
    ReentrantMutex::const_new(RawMutex::with_site(Location::caller()), RawThreadId, val)
}

/// An RAII guard of a [`ReentrantMutex`].
pub type ReentrantMutexGuard<'a, T> = lock_api::ReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;
/// A [`ReentrantMutexGuard`] mapped to a part of the data.
pub type MappedReentrantMutexGuard<'a, T> =
    lock_api::MappedReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;

/// A reader-writer lock (parking_lot's `RwLock`).
pub type RwLock<T> = lock_api::RwLock<RawRwLock, T>;

/// Creates a new reader-writer lock in an unlocked state ready for use,
/// labelled with the caller's location.
#[track_caller]
pub const fn const_rwlock<T>(val: T) -> RwLock<T> {
    RwLock::const_new(RawRwLock::with_site(Location::caller()), val)
}

/// The read guard of an [`RwLock`].
pub type RwLockReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawRwLock, T>;
/// The write guard of an [`RwLock`].
pub type RwLockWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawRwLock, T>;
/// An [`RwLockReadGuard`] mapped to a part of the data.
pub type MappedRwLockReadGuard<'a, T> = lock_api::MappedRwLockReadGuard<'a, RawRwLock, T>;
/// An [`RwLockWriteGuard`] mapped to a part of the data.
pub type MappedRwLockWriteGuard<'a, T> = lock_api::MappedRwLockWriteGuard<'a, RawRwLock, T>;
/// The upgradable read guard of an [`RwLock`].
pub type RwLockUpgradableReadGuard<'a, T> = lock_api::RwLockUpgradableReadGuard<'a, RawRwLock, T>;

/// The guards of the `arc_lock` methods: `lock_api`'s.
#[cfg(feature = "arc_lock")]
pub use self::lock_api::{
    ArcMutexGuard, ArcReentrantMutexGuard, ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard,
    ArcRwLockWriteGuard,
};

/// Deadlock detection (feature `deadlock_detection`): syncprof's detector
/// behind parking_lot's `check_deadlock`.
#[cfg(feature = "deadlock_detection")]
pub mod deadlock {
    pub use syncprof_engine::deadlock::pl::{Backtrace, DeadlockedThread, check_deadlock};
}

#[cfg(all(test, feature = "send_guard"))]
#[test]
fn test_send_guards() {
    fn assert_send<T: Send>() {}

    assert_send::<MutexGuard<'static, ()>>();
    assert_send::<MappedMutexGuard<'static, ()>>();
    assert_send::<FairMutexGuard<'static, ()>>();
    assert_send::<MappedFairMutexGuard<'static, ()>>();
    assert_send::<RwLockReadGuard<'static, ()>>();
    assert_send::<RwLockWriteGuard<'static, ()>>();
    assert_send::<RwLockUpgradableReadGuard<'static, ()>>();
    assert_send::<MappedRwLockReadGuard<'static, ()>>();
    assert_send::<MappedRwLockWriteGuard<'static, ()>>();
}
