//! parking_lot 0.12's own tests, run against the real `parking_lot` 0.12.5
//! (the dev-dependency `parking_lot_012`) and against the compat crate
//! `parking_lot` 0.12 (`compat/parking_lot-0.12`, the dev-dependency
//! `parking_lot_compat_012`) by the same bodies.
//!
//! `parking_lot_012_ported/body.rs` holds the test modules of parking_lot
//! 0.12.5's `src/mutex.rs`, `fair_mutex.rs`, `remutex.rs`, `rwlock.rs`,
//! `condvar.rs` (`tests` and `webkit_queue_test`), `once.rs` and its
//! `tests/issue_203.rs` and `tests/issue_392.rs`, copyright Amanieu d'Antras
//! and the parking_lot contributors, licensed MIT OR Apache-2.0 (as this
//! crate). Changes: `crate::` and `parking_lot::` became `super::pl::` (the
//! library under test); the `serde` tests are compiled out (they need
//! `bincode`, not a dependency here); the `arc_lock` test runs with
//! syncprof's feature `arc_lock` (both libraries are built with theirs);
//! `rand::thread_rng()` is a small xorshift (this crate's `rand` 0.10 has no
//! thread RNG); three condvar tests called the private
//! `Condvar::wait_while_until_internal`, now a local helper that reaches it
//! through the public `wait_while_until` / `wait_while` (whose result,
//! `WaitTimeoutResult`, cannot be made outside the crate: the helper returns
//! its `timed_out()`). No test waits on private state.

/// Instantiates the bodies with `pl` = the library under test.
macro_rules! ported {
    ($module:ident, $library:path) => {
        #[allow(
            clippy::all,
            clippy::undocumented_unsafe_blocks,
            unused_imports,
            unused_mut,
            dead_code,
            static_mut_refs
        )]
        mod $module {
            use $library as pl;
            include!("parking_lot_012_ported/body.rs");
        }
    };
}

ported!(against_parking_lot_012, ::parking_lot_012);
ported!(against_compat_012, ::parking_lot_compat_012);
