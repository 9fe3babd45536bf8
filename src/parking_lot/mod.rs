//! `parking_lot` 0.13's API, item for item, recording contention: change
//! `use parking_lot::{Mutex, RwLock}` to
//! `use syncprof::parking_lot::{Mutex, RwLock}`.
//!
//! ```
//! use std::sync::Arc;
//! use syncprof::parking_lot::Mutex; // was: use parking_lot::Mutex;
//!
//! let counter = Arc::new(Mutex::new(0u64));
//! let workers: Vec<_> = (0..4)
//!     .map(|_| {
//!         let counter = Arc::clone(&counter);
//!         std::thread::spawn(move || *counter.lock() += 1)
//!     })
//!     .collect();
//! for w in workers {
//!     w.join().unwrap();
//! }
//! assert_eq!(*counter.lock(), 4);
//! ```
//!
//! Both profiles are recorded exactly as for the std-shaped primitives
//! (block: the waiter's stack; mutex: the unlocker's, charged by Go's ≥ 1.22
//! rule; labels `kind` and `lock`), by the same state machines.
//!
//! # The `lock` label: wrappers, not aliases
//!
//! parking_lot's `Mutex<T>` is an alias of `lock_api::Mutex<RawMutex, T>`,
//! whose `const fn new` takes `RawMutex::INIT`, a constant: it cannot know
//! where it is called. So [`Mutex`], [`FairMutex`], [`ReentrantMutex`],
//! [`RwLock`], [`RecursiveRwLock`] and [`Condvar`] are thin wrappers
//! (`#[repr(transparent)]` around the `lock_api` type, which they `Deref`
//! to) whose `#[track_caller] const fn new` puts the caller's location into
//! the raw lock. Their methods forward to `lock_api`'s; the guards are
//! `lock_api`'s own types (`MutexGuard<'a, T>` is
//! `lock_api::MutexGuard<'a, RawMutex, T>`, as in parking_lot), so `map`,
//! `try_map`, `unlocked`, `unlock_fair`, `bump`, `upgrade`, `downgrade`…
//! are parking_lot's. What a user can tell: `MutexGuard::mutex(&guard)`
//! returns the `lock_api::Mutex` inside ours, and a function taking
//! `&lock_api::Mutex<RawMutex, T>` gets it by `&*mutex`.
//!
//! A lock built directly through `lock_api` (`lock_api::Mutex::<RawMutex,
//! T>::new`, `RawMutex::INIT`) records too; a constant cannot know its
//! caller, so each of its samples is labelled with the first line of its
//! own stack outside the lock wrappers (`profile::lock_label`); give it a
//! creation-site label with
//! `lock_api::Mutex::from_raw(RawMutex::with_site(Location::caller()), v)`.
//!
//! # Variance
//!
//! As parking_lot's: the guards are `lock_api`'s own types, covariant in
//! their lifetime; the locks and the guards that give `&mut T` are
//! invariant in `T` (so are the plain read guards, which hold a reference to
//! the lock), the mapped read guards covariant. tests/parking_lot_auto_traits.rs
//! checks the covariant cases against parking_lot; these do not compile,
//! with either library:
//!
//! ```compile_fail
//! use syncprof::parking_lot::Mutex;
//! fn shorten<'a, 'b: 'a>(m: Mutex<&'b i32>) -> Mutex<&'a i32> { m }
//! ```
//!
//! ```compile_fail
//! use syncprof::parking_lot::RwLock;
//! fn shorten<'a, 'b: 'a>(m: RwLock<&'b i32>) -> RwLock<&'a i32> { m }
//! ```
//!
//! ```compile_fail
//! use syncprof::parking_lot::MutexGuard;
//! fn shorten<'a, 'b: 'a, 'g>(g: MutexGuard<'g, &'b i32>) -> MutexGuard<'g, &'a i32> { g }
//! ```
//!
//! ```compile_fail
//! use syncprof::parking_lot::RwLockReadGuard;
//! fn shorten<'a, 'b: 'a, 'g>(g: RwLockReadGuard<'g, &'b i32>) -> RwLockReadGuard<'g, &'a i32> { g }
//! ```
//!
//! ```compile_fail
//! use syncprof::parking_lot::MappedRwLockWriteGuard;
//! fn shorten<'a, 'b: 'a, 'g>(
//!     g: MappedRwLockWriteGuard<'g, &'b i32>,
//! ) -> MappedRwLockWriteGuard<'g, &'a i32> {
//!     g
//! }
//! ```
//!
//! # Differences from parking_lot 0.13
//!
//! - Sizes: each lock carries its state, a 32-bit tick of its last
//!   mutex-profile charge and its creation site (16 bytes for a
//!   `Mutex<()>`, 32 for an `RwLock<()>`; parking_lot's are 1 and 8).
//! - Eventual fairness stays: a waiter that has waited ~0.5 ms gets the lock
//!   handed over, at most once per 10 ms per lock (parking_lot 0.13 dropped it; it bounds waits and costs
//!   nothing uncontended). Fair unlocks hand over only a lock nobody took
//!   since the release (syncprof's locks release before they wake).
//! - `Condvar` notifications requeue waiters onto a held mutex, as
//!   parking_lot's do; each waiter's mutex wait is still recorded as a mutex
//!   wait of its own, from the notification.
//! - [`Once`] is `std`'s `Once` with parking_lot's API and a creation site; a
//!   caller that blocks for another thread's initialisation is a block event
//!   of kind `once`.
//! - `arc_lock` (feature `arc_lock`, as parking_lot's): the guards hold an
//!   `Arc` of the `lock_api` lock inside the wrapper, so
//!   `ArcMutexGuard::mutex` returns `&Arc<lock_api::Mutex<RawMutex, T>>`.
//! - `serde`, `owning_ref`, `send_guard` and
//!   `deadlock_detection` (parking_lot features) are not offered as
//!   features of syncprof. The guards are `Send` when a build turns on
//!   `send_guard` of the compat crate `parking_lot` (the raw locks are the
//!   same: one build's parking_lot features hold for all its users, as
//!   with parking_lot); `syncprof::deadlock` (feature `owner-tracking`) is
//!   the deadlock detector.
//! - The compat crates under `compat/` (named `parking_lot`, 0.12 and 0.13)
//!   replace parking_lot for a whole build through `[patch.crates-io]`; the
//!   0.13 one is made of the same raw locks, `Condvar` and `Once` as this
//!   module.

/// The impls every lock wrapper shares: `Deref`/`DerefMut` to the
/// `lock_api` type inside, and `Default`, `From` (labelled with the caller's
/// location) and `Debug` (parking_lot's format, never blocking).
macro_rules! wrapper_impls {
    ($name:ident, $inner:ty) => {
        /// The `lock_api` lock underneath (what the guards' `mutex()` /
        /// `rwlock()` return), for code written against `lock_api`'s types.
        impl<T: ?Sized> core::ops::Deref for $name<T> {
            type Target = $inner;

            #[inline]
            fn deref(&self) -> &Self::Target {
                &self.inner
            }
        }

        impl<T: ?Sized> core::ops::DerefMut for $name<T> {
            #[inline]
            fn deref_mut(&mut self) -> &mut Self::Target {
                &mut self.inner
            }
        }

        impl<T: Default> Default for $name<T> {
            /// A lock holding `T::default()`, labelled with the caller's
            /// location.
            #[track_caller]
            #[inline]
            fn default() -> Self {
                Self::new(T::default())
            }
        }

        impl<T> From<T> for $name<T> {
            /// A lock holding `value`, labelled with the caller's location.
            #[track_caller]
            #[inline]
            fn from(value: T) -> Self {
                Self::new(value)
            }
        }

        impl<T: ?Sized + core::fmt::Debug> core::fmt::Debug for $name<T> {
            /// parking_lot's format; never blocks.
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Debug::fmt(&self.inner, f)
            }
        }
    };
}

#[cfg(feature = "arc_lock")]
mod arc;
mod mutex;
use syncprof_engine::lock_api_raw as raw;
mod remutex;
mod rwlock;

// Shared with the compat crate `parking_lot` 0.13 (engine/src/lock_api_raw/).
pub use mutex::{
    FairMutex, FairMutexGuard, MappedFairMutexGuard, MappedMutexGuard, Mutex, MutexGuard,
};
pub use raw::{Condvar, WaitTimeoutResult};
pub use raw::{Once, OnceState};
pub use raw::{RawCondvar, RawFairMutex, RawMutex, RawRwLock, RawRwLockRecursive, RawThreadId};
pub use remutex::{MappedReentrantMutexGuard, ReentrantMutex, ReentrantMutexGuard};
pub use rwlock::{
    MappedRecursiveRwLockReadGuard, MappedRecursiveRwLockWriteGuard, MappedRwLockReadGuard,
    MappedRwLockWriteGuard, RecursiveRwLock, RecursiveRwLockReadGuard,
    RecursiveRwLockUpgradableReadGuard, RecursiveRwLockWriteGuard, RwLock, RwLockReadGuard,
    RwLockUpgradableReadGuard, RwLockWriteGuard,
};

pub use ::lock_api;

/// The guards of the `arc_lock` methods (`lock_arc`, `read_arc`, …):
/// `lock_api`'s, as parking_lot re-exports them.
#[cfg(feature = "arc_lock")]
#[cfg_attr(docsrs, doc(cfg(feature = "arc_lock")))]
pub use ::lock_api::{
    ArcMutexGuard, ArcReentrantMutexGuard, ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard,
    ArcRwLockWriteGuard,
};
