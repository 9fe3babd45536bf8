//! The compat crates export every item of the crate they replace: the
//! re-export lists of parking_lot 0.12.5's and 0.13.0's `lib.rs` (features
//! `arc_lock` and, in the compat crates' own tests, `deadlock_detection`),
//! imported by name from both, and the raw locks implement the same
//! `lock_api` traits with the same auto traits.

#![allow(unused_imports)]

use static_assertions::{assert_impl_all, assert_not_impl_any};

/// Imports parking_lot 0.12.5's public items from `$library`.
macro_rules! items_012 {
    ($module:ident, $library:ident) => {
        mod $module {
            use $library::{
                ArcMutexGuard, ArcReentrantMutexGuard, ArcRwLockReadGuard,
                ArcRwLockUpgradableReadGuard, ArcRwLockWriteGuard, Condvar, FairMutex,
                FairMutexGuard, MappedFairMutexGuard, MappedMutexGuard, MappedReentrantMutexGuard,
                MappedRwLockReadGuard, MappedRwLockWriteGuard, Mutex, MutexGuard, Once, OnceState,
                RawFairMutex, RawMutex, RawRwLock, RawThreadId, ReentrantMutex,
                ReentrantMutexGuard, RwLock, RwLockReadGuard, RwLockUpgradableReadGuard,
                RwLockWriteGuard, WaitTimeoutResult, const_fair_mutex, const_mutex,
                const_reentrant_mutex, const_rwlock, lock_api,
            };

            /// The `const_*` constructors in a `static`, and `OnceState`'s
            /// 0.12 variants and methods.
            #[test]
            fn constructors_and_once_state() {
                static M: Mutex<u8> = const_mutex(1);
                static F: FairMutex<u8> = const_fair_mutex(2);
                static R: ReentrantMutex<u8> = const_reentrant_mutex(3);
                static W: RwLock<u8> = const_rwlock(4);
                static O: Once = Once::new();
                assert_eq!(*M.lock() + *F.lock() + *R.lock() + *W.read(), 10);
                assert_eq!(O.state(), OnceState::New);
                O.call_once(|| {});
                assert!(O.state().done() && !O.state().poisoned());
                let _ = [
                    OnceState::New,
                    OnceState::Poisoned,
                    OnceState::InProgress,
                    OnceState::Done,
                ];
            }
        }
    };
}

/// Imports parking_lot 0.13.0's public items from `$library`.
macro_rules! items_013 {
    ($module:ident, $library:ident) => {
        mod $module {
            use $library::{
                ArcMutexGuard, ArcReentrantMutexGuard, ArcRwLockReadGuard,
                ArcRwLockUpgradableReadGuard, ArcRwLockWriteGuard, Condvar, FairMutex,
                FairMutexGuard, MappedFairMutexGuard, MappedMutexGuard,
                MappedRecursiveRwLockReadGuard, MappedRecursiveRwLockWriteGuard,
                MappedReentrantMutexGuard, MappedRwLockReadGuard, MappedRwLockWriteGuard, Mutex,
                MutexGuard, Once, OnceState, RawCondvar, RawFairMutex, RawMutex, RawRwLock,
                RawRwLockRecursive, RawThreadId, RecursiveRwLock, RecursiveRwLockReadGuard,
                RecursiveRwLockUpgradableReadGuard, RecursiveRwLockWriteGuard, ReentrantMutex,
                ReentrantMutexGuard, RwLock, RwLockReadGuard, RwLockUpgradableReadGuard,
                RwLockWriteGuard, WaitTimeoutResult, lock_api,
            };
        }
    };
}

items_012!(real_012, parking_lot_012);
items_012!(compat_012, parking_lot_compat_012);
items_013!(real_013, parking_lot);
items_013!(compat_013, parking_lot_compat_013);

// lock_api 0.4's traits, as parking_lot 0.12's raw locks implement them.
assert_impl_all!(
    parking_lot_compat_012::RawMutex: Send,
    Sync,
    lock_api04::RawMutex,
    lock_api04::RawMutexFair,
    lock_api04::RawMutexTimed
);
assert_impl_all!(
    parking_lot_compat_012::RawFairMutex: Send,
    Sync,
    lock_api04::RawMutex,
    lock_api04::RawMutexFair,
    lock_api04::RawMutexTimed
);
assert_impl_all!(
    parking_lot_compat_012::RawRwLock: Send,
    Sync,
    lock_api04::RawRwLock,
    lock_api04::RawRwLockFair,
    lock_api04::RawRwLockDowngrade,
    lock_api04::RawRwLockTimed,
    lock_api04::RawRwLockRecursive,
    lock_api04::RawRwLockRecursiveTimed,
    lock_api04::RawRwLockUpgrade,
    lock_api04::RawRwLockUpgradeFair,
    lock_api04::RawRwLockUpgradeDowngrade,
    lock_api04::RawRwLockUpgradeTimed
);
assert_impl_all!(parking_lot_compat_012::RawThreadId: lock_api04::GetThreadId);
assert_impl_all!(parking_lot_compat_012::Condvar: Send, Sync);
assert_impl_all!(parking_lot_compat_012::Once: Send, Sync);
// Guards are not `Send` without `send_guard`, as parking_lot 0.12's.
assert_not_impl_any!(parking_lot_compat_012::MutexGuard<'static, ()>: Send);
assert_not_impl_any!(parking_lot_compat_012::RwLockWriteGuard<'static, ()>: Send);
assert_impl_all!(parking_lot_compat_012::MutexGuard<'static, ()>: Sync);

/// The 0.12 condvar takes lock_api 0.4 guards of the compat mutex, and its
/// `WaitTimeoutResult` is its own type.
#[test]
fn compat_012_condvar_times_out() {
    let m = parking_lot_compat_012::Mutex::new(());
    let c = parking_lot_compat_012::Condvar::new();
    let mut g = m.lock();
    let r: parking_lot_compat_012::WaitTimeoutResult =
        c.wait_for(&mut g, std::time::Duration::from_millis(5));
    assert!(r.timed_out());
}
