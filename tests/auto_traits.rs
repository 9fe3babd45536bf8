//! Variance and auto traits (`Send`, `Sync`, `UnwindSafe`, `RefUnwindSafe`,
//! `Unpin`) of every public type, compared with `std::sync`'s own: a program
//! that compiles with `std::sync` must compile with `syncprof`, and one that
//! does not must not.

use std::cell::{Cell, UnsafeCell};
use std::marker::PhantomData;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::rc::Rc;

use static_assertions::{assert_impl_all, assert_not_impl_any};

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
        let (std, ours) = (auto_traits!($std), auto_traits!($ours));
        if std != ours {
            $diffs.push(format!(
                "{}: std {:?}, syncprof {:?} ([Send, Sync, UnwindSafe, RefUnwindSafe, Unpin])",
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
        compare!($diffs, std::sync::Mutex<$x>, syncprof::Mutex<$x>);
        compare!(
            $diffs,
            std::sync::MutexGuard<'static, $x>,
            syncprof::MutexGuard<'static, $x>
        );
        compare!($diffs, std::sync::RwLock<$x>, syncprof::RwLock<$x>);
        compare!(
            $diffs,
            std::sync::RwLockReadGuard<'static, $x>,
            syncprof::RwLockReadGuard<'static, $x>
        );
        compare!(
            $diffs,
            std::sync::RwLockWriteGuard<'static, $x>,
            syncprof::RwLockWriteGuard<'static, $x>
        );
        compare!(
            $diffs,
            std::sync::mpsc::Sender<$x>,
            syncprof::mpsc::Sender<$x>
        );
        compare!(
            $diffs,
            std::sync::mpsc::SyncSender<$x>,
            syncprof::mpsc::SyncSender<$x>
        );
        compare!(
            $diffs,
            std::sync::mpsc::Receiver<$x>,
            syncprof::mpsc::Receiver<$x>
        );
        compare!(
            $diffs,
            std::sync::mpsc::Iter<'static, $x>,
            syncprof::mpsc::Iter<'static, $x>
        );
        compare!(
            $diffs,
            std::sync::mpsc::TryIter<'static, $x>,
            syncprof::mpsc::TryIter<'static, $x>
        );
        compare!(
            $diffs,
            std::sync::mpsc::IntoIter<$x>,
            syncprof::mpsc::IntoIter<$x>
        );
    }};
}

#[test]
fn the_probe_tells_yes_from_no() {
    assert_eq!(auto_traits!(i32), [true; 5]);
    assert_eq!(auto_traits!(Rc<i32>), [false, false, true, true, true]);
    assert_eq!(auto_traits!(Cell<i32>), [true, false, true, false, true]);
    assert_eq!(
        auto_traits!(std::marker::PhantomPinned),
        [true, true, true, true, false]
    );
}

#[test]
fn every_type_has_std_s_auto_traits() {
    let mut diffs = Vec::new();
    compare!(diffs, std::sync::Condvar, syncprof::Condvar);
    compare!(diffs, std::sync::Barrier, syncprof::Barrier);
    compare!(
        diffs,
        std::sync::BarrierWaitResult,
        syncprof::BarrierWaitResult
    );
    compare!(
        diffs,
        std::sync::WaitTimeoutResult,
        syncprof::WaitTimeoutResult
    );
    // Parameters with every combination of the traits that matter: all of
    // them; Send only; neither Send nor Sync; Sync but not Send; not
    // UnwindSafe; not RefUnwindSafe; none at all.
    compare_generic!(diffs, i32);
    compare_generic!(diffs, Cell<i32>);
    compare_generic!(diffs, Rc<i32>);
    compare_generic!(diffs, std::sync::MutexGuard<'static, i32>);
    compare_generic!(diffs, &'static mut i32);
    compare_generic!(diffs, UnsafeCell<i32>);
    compare_generic!(diffs, Box<dyn Fn()>);
    assert!(
        diffs.is_empty(),
        "auto traits differ from std's:\n{}",
        diffs.join("\n")
    );
}

/// `syncprof::tokio`'s notify futures against tokio's: the owned one is
/// `Send` and `'static` (it is spawned), neither is `Unpin`.
#[cfg(feature = "tokio")]
#[test]
fn notify_futures_have_tokio_s_auto_traits() {
    let mut diffs = Vec::new();
    compare!(diffs, tokio::sync::Notify, syncprof::tokio::Notify);
    compare!(
        diffs,
        tokio::sync::futures::Notified<'static>,
        syncprof::tokio::futures::Notified<'static>
    );
    compare!(
        diffs,
        tokio::sync::futures::OwnedNotified,
        syncprof::tokio::futures::OwnedNotified
    );
    assert!(
        diffs.is_empty(),
        "auto traits differ from tokio's:\n{}",
        diffs.join("\n")
    );
    fn spawnable<F: std::future::Future + Send + 'static>() {}
    spawnable::<syncprof::tokio::futures::OwnedNotified>();
}

// The same facts, spelled out, as compile-time checks: these fail the build.
assert_not_impl_any!(syncprof::MutexGuard<'static, i32>: Send);
assert_not_impl_any!(syncprof::RwLockReadGuard<'static, i32>: Send);
assert_not_impl_any!(syncprof::RwLockWriteGuard<'static, i32>: Send);
assert_not_impl_any!(syncprof::MutexGuard<'static, Cell<i32>>: Sync);
assert_not_impl_any!(syncprof::RwLockReadGuard<'static, Cell<i32>>: Sync, UnwindSafe, RefUnwindSafe);
assert_not_impl_any!(syncprof::RwLockWriteGuard<'static, Cell<i32>>: Sync);
assert_not_impl_any!(syncprof::Mutex<Rc<i32>>: Send, Sync);
assert_not_impl_any!(syncprof::RwLock<Cell<i32>>: Sync);
assert_not_impl_any!(syncprof::RwLock<std::sync::MutexGuard<'static, i32>>: Send, Sync);
assert_not_impl_any!(syncprof::mpsc::Receiver<i32>: Sync);
assert_not_impl_any!(syncprof::mpsc::Sender<Rc<i32>>: Send, Sync);
assert_not_impl_any!(syncprof::mpsc::SyncSender<Rc<i32>>: Send, Sync);
assert_impl_all!(syncprof::MutexGuard<'static, Cell<i32>>: UnwindSafe, RefUnwindSafe);
assert_impl_all!(syncprof::RwLockReadGuard<'static, i32>: Sync, UnwindSafe, RefUnwindSafe);
assert_impl_all!(syncprof::Mutex<Cell<i32>>: Send, Sync, UnwindSafe, RefUnwindSafe);
assert_impl_all!(syncprof::Condvar: Send, Sync, UnwindSafe, RefUnwindSafe);
assert_impl_all!(syncprof::Barrier: Send, Sync, UnwindSafe, RefUnwindSafe);
assert_impl_all!(syncprof::mpsc::Sender<i32>: Send, Sync);
assert_impl_all!(syncprof::mpsc::Receiver<i32>: Send);

/// std's `test_read_guard_covariance` (library/std/src/sync/poison/rwlock/
/// tests.rs): a guard of `&'static i32` is accepted where a guard of `&'a
/// i32` is expected. Does not compile unless the guard is covariant in `T`.
#[test]
fn read_guard_is_covariant() {
    fn do_stuff<'a>(_: syncprof::RwLockReadGuard<'_, &'a i32>, _: &'a i32) {}
    let j: i32 = 5;
    let lock = syncprof::RwLock::new(&j);
    {
        let i = 6;
        do_stuff(lock.read().unwrap(), &i);
    }
    // As std's test: the lock outlives the shorter-lived `i`.
    assert_eq!(**lock.read().unwrap(), 5);
}

/// A downgraded write guard is a read guard like any other.
#[test]
fn downgraded_guard_reads_and_releases() {
    let lock = syncprof::RwLock::new(vec![1]);
    let mut w = lock.write().unwrap();
    w.push(2);
    let r = syncprof::RwLockWriteGuard::downgrade(w);
    assert_eq!(*r, [1, 2]);
    drop(r);
    assert!(lock.try_write().is_ok());
}
