//! parking_lot 0.13's own tests, run against `parking_lot`, against
//! `syncprof::parking_lot` and against the compat crate `parking_lot` 0.13
//! (`compat/parking_lot-0.13`, the dev-dependency `parking_lot_compat_013`)
//! by the same bodies.
//!
//! `parking_lot_ported/body.rs` holds the test modules of parking_lot
//! 0.13.0's `src/mutex.rs`, `fair_mutex.rs`, `remutex.rs`, `rwlock.rs`,
//! `recursive_rwlock.rs`, `condvar.rs`, `once.rs` and its `tests/issue_203.rs`
//! and `tests/issue_392.rs`, copyright Amanieu d'Antras and the parking_lot
//! contributors, licensed MIT OR Apache-2.0 (as this crate). Changes: `crate::`
//! became `super::pl::` (the library under test), the tests of the features
//! `serde` and `arc_lock` (not offered) are compiled out,
//! `rand::rng()` is a small xorshift, and three waits for a thread to park
//! (spins on private state: `RawRwLock::has_parked_threads`, `Once`'s
//! PARKED_BIT) are 100 ms sleeps.

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
            include!("parking_lot_ported/body.rs");
        }
    };
}

ported!(against_parking_lot, ::parking_lot);
ported!(against_syncprof, ::syncprof::parking_lot);
ported!(against_compat_013, ::parking_lot_compat_013);
