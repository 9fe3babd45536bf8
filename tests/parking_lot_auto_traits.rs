//! Auto traits (`Send`, `Sync`, `UnwindSafe`, `RefUnwindSafe`, `Unpin`) and
//! variance of every public type of `syncprof::parking_lot`, compared with
//! parking_lot 0.13's own: a program that compiles with parking_lot must
//! compile with syncprof, and one that does not must not.

use std::cell::{Cell, UnsafeCell};
use std::marker::PhantomData;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::rc::Rc;

use static_assertions::{assert_impl_all, assert_not_impl_any};

/// Whether the engine's feature `send_guard` is on in this build (it is
/// under `cargo … --workspace --all-features`, the engine being a member).
const GUARDS_SEND: bool = syncprof_engine::lock_api_raw::SEND_GUARD;

/// Whether `$ty` implements `$trait`, as a constant: an inherent associated
/// constant, which exists only when the bound holds, shadows the trait's
/// (the `impls` crate's trick).
macro_rules! implements {
    ($ty:ty: $trait:path) => {{
        #[allow(dead_code)]
        struct Probe<T: ?Sized>(PhantomData<T>);
        #[allow(dead_code)]
        trait Fallback {
            const YES: bool = false;
        }
        impl<T: ?Sized> Fallback for Probe<T> {}
        #[allow(dead_code)]
        impl<T: ?Sized + $trait> Probe<T> {
            const YES: bool = true;
        }
        <Probe<$ty>>::YES
    }};
}

/// `[Send, Sync, UnwindSafe, RefUnwindSafe, Unpin]` of a type.
macro_rules! auto_traits {
    ($ty:ty) => {
        [
            implements!($ty: Send),
            implements!($ty: Sync),
            implements!($ty: UnwindSafe),
            implements!($ty: RefUnwindSafe),
            implements!($ty: Unpin),
        ]
    };
}

/// Compares one std type with its syncprof twin, noting any difference.
macro_rules! compare {
    ($diffs:ident, $std:ty, $ours:ty) => {{
        let (mut std, ours) = (auto_traits!($std), auto_traits!($ours));
        if GUARDS_SEND && stringify!($ours).contains("Guard") {
            // The engine's `send_guard` (a compat crate's feature, or
            // `--workspace --all-features`): guards are `Send`, as
            // parking_lot's with that feature.
            std[0] = ours[0];
        }
        if std != ours {
            $diffs.push(format!(
                "{}: parking_lot {:?}, syncprof {:?} ([Send, Sync, UnwindSafe, RefUnwindSafe, Unpin])",
                stringify!($ours),
                std,
                ours
            ));
        }
    }};
}

/// Every generic type of both APIs, instantiated with `$x`.
macro_rules! compare_generic {
    ($diffs:ident, $x:ty) => {{
        compare!(
            $diffs,
            parking_lot::Mutex<$x>,
            syncprof::parking_lot::Mutex<$x>
        );
        compare!(
            $diffs,
            parking_lot::MutexGuard<'static, $x>,
            syncprof::parking_lot::MutexGuard<'static, $x>
        );
        compare!(
            $diffs,
            parking_lot::MappedMutexGuard<'static, $x>,
            syncprof::parking_lot::MappedMutexGuard<'static, $x>
        );
        compare!(
            $diffs,
            parking_lot::FairMutex<$x>,
            syncprof::parking_lot::FairMutex<$x>
        );
        compare!(
            $diffs,
            parking_lot::FairMutexGuard<'static, $x>,
            syncprof::parking_lot::FairMutexGuard<'static, $x>
        );
        compare!(
            $diffs,
            parking_lot::MappedFairMutexGuard<'static, $x>,
            syncprof::parking_lot::MappedFairMutexGuard<'static, $x>
        );
        compare!(
            $diffs,
            parking_lot::ReentrantMutex<$x>,
            syncprof::parking_lot::ReentrantMutex<$x>
        );
        compare!(
            $diffs,
            parking_lot::ReentrantMutexGuard<'static, $x>,
            syncprof::parking_lot::ReentrantMutexGuard<'static, $x>
        );
        compare!(
            $diffs,
            parking_lot::MappedReentrantMutexGuard<'static, $x>,
            syncprof::parking_lot::MappedReentrantMutexGuard<'static, $x>
        );
        compare!(
            $diffs,
            parking_lot::RwLock<$x>,
            syncprof::parking_lot::RwLock<$x>
        );
        compare!(
            $diffs,
            parking_lot::RwLockReadGuard<'static, $x>,
            syncprof::parking_lot::RwLockReadGuard<'static, $x>
        );
        compare!(
            $diffs,
            parking_lot::RwLockWriteGuard<'static, $x>,
            syncprof::parking_lot::RwLockWriteGuard<'static, $x>
        );
        compare!(
            $diffs,
            parking_lot::RwLockUpgradableReadGuard<'static, $x>,
            syncprof::parking_lot::RwLockUpgradableReadGuard<'static, $x>
        );
        compare!(
            $diffs,
            parking_lot::MappedRwLockReadGuard<'static, $x>,
            syncprof::parking_lot::MappedRwLockReadGuard<'static, $x>
        );
        compare!(
            $diffs,
            parking_lot::MappedRwLockWriteGuard<'static, $x>,
            syncprof::parking_lot::MappedRwLockWriteGuard<'static, $x>
        );
        compare!(
            $diffs,
            parking_lot::RecursiveRwLock<$x>,
            syncprof::parking_lot::RecursiveRwLock<$x>
        );
        compare!(
            $diffs,
            parking_lot::RecursiveRwLockReadGuard<'static, $x>,
            syncprof::parking_lot::RecursiveRwLockReadGuard<'static, $x>
        );
        compare!(
            $diffs,
            parking_lot::RecursiveRwLockWriteGuard<'static, $x>,
            syncprof::parking_lot::RecursiveRwLockWriteGuard<'static, $x>
        );
        compare!(
            $diffs,
            parking_lot::RecursiveRwLockUpgradableReadGuard<'static, $x>,
            syncprof::parking_lot::RecursiveRwLockUpgradableReadGuard<'static, $x>
        );
        compare!(
            $diffs,
            parking_lot::MappedRecursiveRwLockReadGuard<'static, $x>,
            syncprof::parking_lot::MappedRecursiveRwLockReadGuard<'static, $x>
        );
        compare!(
            $diffs,
            parking_lot::MappedRecursiveRwLockWriteGuard<'static, $x>,
            syncprof::parking_lot::MappedRecursiveRwLockWriteGuard<'static, $x>
        );
    }};
}

#[test]
fn every_type_has_parking_lot_s_auto_traits() {
    let mut diffs = Vec::new();
    compare!(diffs, parking_lot::Condvar, syncprof::parking_lot::Condvar);
    compare!(
        diffs,
        parking_lot::WaitTimeoutResult,
        syncprof::parking_lot::WaitTimeoutResult
    );
    compare!(diffs, parking_lot::Once, syncprof::parking_lot::Once);
    compare!(
        diffs,
        parking_lot::OnceState,
        syncprof::parking_lot::OnceState
    );
    compare!(
        diffs,
        parking_lot::RawMutex,
        syncprof::parking_lot::RawMutex
    );
    compare!(
        diffs,
        parking_lot::RawFairMutex,
        syncprof::parking_lot::RawFairMutex
    );
    compare!(
        diffs,
        parking_lot::RawRwLock,
        syncprof::parking_lot::RawRwLock
    );
    compare!(
        diffs,
        parking_lot::RawRwLockRecursive,
        syncprof::parking_lot::RawRwLockRecursive
    );
    compare!(
        diffs,
        parking_lot::RawThreadId,
        syncprof::parking_lot::RawThreadId
    );
    compare_generic!(diffs, i32);
    compare_generic!(diffs, Cell<i32>);
    compare_generic!(diffs, Rc<i32>);
    compare_generic!(diffs, std::sync::MutexGuard<'static, i32>);
    compare_generic!(diffs, &'static mut i32);
    compare_generic!(diffs, UnsafeCell<i32>);
    compare_generic!(diffs, Box<dyn Fn()>);
    assert!(
        diffs.is_empty(),
        "auto traits differ from parking_lot's:\n{}",
        diffs.join("\n")
    );
}

// The same facts, spelled out, as compile-time checks.
// Guards are `Send` exactly with the engine's `send_guard` (the reentrant
// guard never: lock_api's holds a `GuardNoSend` of its own).
const _: () = {
    assert!(implements!(syncprof::parking_lot::MutexGuard<'static, i32>: Send) == GUARDS_SEND);
    assert!(implements!(syncprof::parking_lot::RwLockReadGuard<'static, i32>: Send) == GUARDS_SEND);
    assert!(
        implements!(syncprof::parking_lot::RwLockWriteGuard<'static, i32>: Send) == GUARDS_SEND
    );
    assert!(
        implements!(syncprof::parking_lot::RwLockUpgradableReadGuard<'static, i32>: Send)
            == GUARDS_SEND
    );
};
assert_not_impl_any!(syncprof::parking_lot::ReentrantMutexGuard<'static, i32>: Send);
assert_not_impl_any!(syncprof::parking_lot::Mutex<Rc<i32>>: Send, Sync);
assert_not_impl_any!(syncprof::parking_lot::Mutex<i32>: RefUnwindSafe);
assert_not_impl_any!(syncprof::parking_lot::RwLock<Cell<i32>>: Sync);
assert_not_impl_any!(syncprof::parking_lot::ReentrantMutex<Rc<i32>>: Send, Sync);
assert_impl_all!(syncprof::parking_lot::ReentrantMutex<Cell<i32>>: Sync);
assert_impl_all!(syncprof::parking_lot::Mutex<Cell<i32>>: Send, Sync, UnwindSafe, Unpin);
assert_impl_all!(syncprof::parking_lot::RwLock<i32>: Send, Sync, UnwindSafe);
assert_impl_all!(syncprof::parking_lot::Condvar: Send, Sync, UnwindSafe, RefUnwindSafe);
assert_impl_all!(syncprof::parking_lot::Once: Send, Sync);
assert_impl_all!(syncprof::parking_lot::RawMutex: Send, Sync, lock_api::RawMutexFair, lock_api::RawMutexTimed);
assert_impl_all!(
    syncprof::parking_lot::RawRwLock: Send,
    Sync,
    lock_api::RawRwLockFair,
    lock_api::RawRwLockDowngrade,
    lock_api::RawRwLockTimed,
    lock_api::RawRwLockUpgradeFair,
    lock_api::RawRwLockUpgradeDowngrade,
    lock_api::RawRwLockUpgradeTimed
);

/// `lock_api`'s own wrappers work over syncprof's raw locks.
#[test]
fn lock_api_types_over_syncprof_raw_locks() {
    let m: lock_api::Mutex<syncprof::parking_lot::RawMutex, i32> = lock_api::Mutex::new(1);
    *m.lock() += 1;
    assert_eq!(*m.lock(), 2);
    let rw: lock_api::RwLock<syncprof::parking_lot::RawRwLock, i32> = lock_api::RwLock::new(1);
    let u = rw.upgradable_read();
    let mut w = lock_api::RwLockUpgradableReadGuard::upgrade(u);
    *w += 1;
    drop(w);
    assert_eq!(*rw.read(), 2);
    let cv: lock_api::Condvar<syncprof::parking_lot::RawCondvar> = lock_api::Condvar::new();
    let mut g = m.lock();
    assert!(
        cv.wait_for(&mut g, std::time::Duration::from_millis(1))
            .timed_out()
    );
}

/// Variance, positive: what is covariant in parking_lot 0.13 (checked there
/// by the same functions) is covariant here; the invariant cases are
/// `compile_fail` examples in `syncprof::parking_lot`'s module docs.
macro_rules! covariance {
    ($module:ident, $lib:path) => {
        #[allow(dead_code)]
        mod $module {
            use $lib as pl;

            fn mutex_guard<'a, 'b: 'a>(x: pl::MutexGuard<'b, i32>) -> pl::MutexGuard<'a, i32> {
                x
            }

            fn mapped_mutex_guard<'a, 'b: 'a>(
                x: pl::MappedMutexGuard<'b, i32>,
            ) -> pl::MappedMutexGuard<'a, i32> {
                x
            }

            fn fair_mutex_guard<'a, 'b: 'a>(
                x: pl::FairMutexGuard<'b, i32>,
            ) -> pl::FairMutexGuard<'a, i32> {
                x
            }

            fn mapped_fair_mutex_guard<'a, 'b: 'a>(
                x: pl::MappedFairMutexGuard<'b, i32>,
            ) -> pl::MappedFairMutexGuard<'a, i32> {
                x
            }

            fn reentrant_mutex_guard<'a, 'b: 'a>(
                x: pl::ReentrantMutexGuard<'b, i32>,
            ) -> pl::ReentrantMutexGuard<'a, i32> {
                x
            }

            fn mapped_reentrant_mutex_guard<'a, 'b: 'a>(
                x: pl::MappedReentrantMutexGuard<'b, i32>,
            ) -> pl::MappedReentrantMutexGuard<'a, i32> {
                x
            }

            fn rw_lock_read_guard<'a, 'b: 'a>(
                x: pl::RwLockReadGuard<'b, i32>,
            ) -> pl::RwLockReadGuard<'a, i32> {
                x
            }

            fn rw_lock_write_guard<'a, 'b: 'a>(
                x: pl::RwLockWriteGuard<'b, i32>,
            ) -> pl::RwLockWriteGuard<'a, i32> {
                x
            }

            fn rw_lock_upgradable_read_guard<'a, 'b: 'a>(
                x: pl::RwLockUpgradableReadGuard<'b, i32>,
            ) -> pl::RwLockUpgradableReadGuard<'a, i32> {
                x
            }

            fn mapped_rw_lock_read_guard<'a, 'b: 'a>(
                x: pl::MappedRwLockReadGuard<'b, i32>,
            ) -> pl::MappedRwLockReadGuard<'a, i32> {
                x
            }

            fn mapped_rw_lock_write_guard<'a, 'b: 'a>(
                x: pl::MappedRwLockWriteGuard<'b, i32>,
            ) -> pl::MappedRwLockWriteGuard<'a, i32> {
                x
            }

            fn recursive_rw_lock_read_guard<'a, 'b: 'a>(
                x: pl::RecursiveRwLockReadGuard<'b, i32>,
            ) -> pl::RecursiveRwLockReadGuard<'a, i32> {
                x
            }

            fn recursive_rw_lock_write_guard<'a, 'b: 'a>(
                x: pl::RecursiveRwLockWriteGuard<'b, i32>,
            ) -> pl::RecursiveRwLockWriteGuard<'a, i32> {
                x
            }

            fn recursive_rw_lock_upgradable_read_guard<'a, 'b: 'a>(
                x: pl::RecursiveRwLockUpgradableReadGuard<'b, i32>,
            ) -> pl::RecursiveRwLockUpgradableReadGuard<'a, i32> {
                x
            }

            fn mapped_recursive_rw_lock_read_guard<'a, 'b: 'a>(
                x: pl::MappedRecursiveRwLockReadGuard<'b, i32>,
            ) -> pl::MappedRecursiveRwLockReadGuard<'a, i32> {
                x
            }

            fn mapped_recursive_rw_lock_write_guard<'a, 'b: 'a>(
                x: pl::MappedRecursiveRwLockWriteGuard<'b, i32>,
            ) -> pl::MappedRecursiveRwLockWriteGuard<'a, i32> {
                x
            }

            fn mapped_read<'a, 'b: 'a, 'g>(
                x: pl::MappedRwLockReadGuard<'g, &'b i32>,
            ) -> pl::MappedRwLockReadGuard<'g, &'a i32> {
                x
            }

            fn mapped_recursive_read<'a, 'b: 'a, 'g>(
                x: pl::MappedRecursiveRwLockReadGuard<'g, &'b i32>,
            ) -> pl::MappedRecursiveRwLockReadGuard<'g, &'a i32> {
                x
            }

            fn mapped_reentrant<'a, 'b: 'a, 'g>(
                x: pl::MappedReentrantMutexGuard<'g, &'b i32>,
            ) -> pl::MappedReentrantMutexGuard<'g, &'a i32> {
                x
            }
        }
    };
}

covariance!(covariant_in_parking_lot, ::parking_lot);
covariance!(covariant_in_syncprof, ::syncprof::parking_lot);
