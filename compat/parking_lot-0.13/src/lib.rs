//! parking_lot 0.13.0's API, item for item, on syncprof's recording locks.
//!
//! This crate is named `parking_lot` so that a build can replace the real
//! one everywhere, its dependencies' uses included:
//!
//! ```toml
//! [patch.crates-io]
//! parking_lot = { path = "…/syncprof/compat/parking_lot-0.13" }
//! ```
//!
//! Every lock then records Go-style block and mutex contention profiles into
//! the one global profile that `syncprof` exports (`syncprof::profile`).
//! It holds no lock logic: the types are parking_lot's aliases of `lock_api`
//! 0.5's wrappers, over the raw locks of `syncprof-engine`
//! (`lock_api_raw`), which are also what `syncprof::parking_lot` is made
//! of; [`Condvar`] and [`Once`] are the very types `syncprof::parking_lot`
//! exports. It does not depend on `syncprof` (which depends, through
//! prometheus-client or tokio, on `parking_lot`: with this patch, on this
//! crate).
//!
//! # Differences from parking_lot 0.13
//!
//! - Locks made through `new` (a `const fn` over `RawMutex::INIT`) share one
//!   `lock` label, a line of syncprof-engine's source; a `Condvar` or
//!   `Once` is labelled with its creation site.
//! - Sizes and fairness are syncprof's (see `syncprof::parking_lot`).
//! - `deadlock` (feature `deadlock_detection`): syncprof's detector; see
//!   [`deadlock::DeadlockedThread`] for what differs.
//! - Feature `nightly` is accepted and does nothing.
//!
//! # Examples
//!
//! ```
//! use parking_lot::{Condvar, Mutex};
//!
//! let pair = (Mutex::new(false), Condvar::new());
//! *pair.0.lock() = true;
//! pair.1.notify_one();
//! assert!(*pair.0.lock());
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

use syncprof_engine::lock_api_raw as raw;

pub use raw::{
    Condvar, Once, OnceState, RawCondvar, RawFairMutex, RawMutex, RawRwLock, RawRwLockRecursive,
    RawThreadId, WaitTimeoutResult,
};

pub use ::lock_api;

/// A mutual exclusion primitive (parking_lot's `Mutex`).
pub type Mutex<T> = lock_api::Mutex<RawMutex, T>;
/// An RAII guard of a [`Mutex`].
pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, RawMutex, T>;
/// A [`MutexGuard`] mapped to a part of the data.
pub type MappedMutexGuard<'a, T> = lock_api::MappedMutexGuard<'a, RawMutex, T>;

/// A mutex whose every unlock is fair (parking_lot's `FairMutex`).
pub type FairMutex<T> = lock_api::Mutex<RawFairMutex, T>;
/// An RAII guard of a [`FairMutex`].
pub type FairMutexGuard<'a, T> = lock_api::MutexGuard<'a, RawFairMutex, T>;
/// A [`FairMutexGuard`] mapped to a part of the data.
pub type MappedFairMutexGuard<'a, T> = lock_api::MappedMutexGuard<'a, RawFairMutex, T>;

/// A mutex the thread holding it may lock again (parking_lot's
/// `ReentrantMutex`).
pub type ReentrantMutex<T> = lock_api::ReentrantMutex<RawMutex, RawThreadId, T>;
/// An RAII guard of a [`ReentrantMutex`].
pub type ReentrantMutexGuard<'a, T> = lock_api::ReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;
/// A [`ReentrantMutexGuard`] mapped to a part of the data.
pub type MappedReentrantMutexGuard<'a, T> =
    lock_api::MappedReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;

/// A reader-writer lock (parking_lot's `RwLock`).
pub type RwLock<T> = lock_api::RwLock<RawRwLock, T>;
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

/// A reader-writer lock whose readers join while readers are inside, even
/// if a writer waits (parking_lot's `RecursiveRwLock`).
pub type RecursiveRwLock<T> = lock_api::RwLock<RawRwLockRecursive, T>;
/// The read guard of a [`RecursiveRwLock`].
pub type RecursiveRwLockReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawRwLockRecursive, T>;
/// The write guard of a [`RecursiveRwLock`].
pub type RecursiveRwLockWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawRwLockRecursive, T>;
/// The upgradable read guard of a [`RecursiveRwLock`].
pub type RecursiveRwLockUpgradableReadGuard<'a, T> =
    lock_api::RwLockUpgradableReadGuard<'a, RawRwLockRecursive, T>;
/// A [`RecursiveRwLockReadGuard`] mapped to a part of the data.
pub type MappedRecursiveRwLockReadGuard<'a, T> =
    lock_api::MappedRwLockReadGuard<'a, RawRwLockRecursive, T>;
/// A [`RecursiveRwLockWriteGuard`] mapped to a part of the data.
pub type MappedRecursiveRwLockWriteGuard<'a, T> =
    lock_api::MappedRwLockWriteGuard<'a, RawRwLockRecursive, T>;

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
    assert_send::<RecursiveRwLockReadGuard<'static, ()>>();
    assert_send::<RecursiveRwLockWriteGuard<'static, ()>>();
    assert_send::<RecursiveRwLockUpgradableReadGuard<'static, ()>>();
    assert_send::<MappedRecursiveRwLockReadGuard<'static, ()>>();
    assert_send::<MappedRecursiveRwLockWriteGuard<'static, ()>>();
}
