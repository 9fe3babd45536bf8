//! syncprof: drop-in `std::sync` primitives that record where your program
//! waits (block profile) and who made it wait (mutex profile), exported as
//! pprof.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod profile;
pub mod sync;

pub use sync::mpsc;

#[cfg(feature = "http")]
pub mod http;

pub use profile::rate::{block_rate, mutex_fraction, set_block_rate, set_mutex_fraction};

pub(crate) mod raw;

pub use sync::{
    Barrier, BarrierWaitResult, Condvar, LockResult, Mutex, MutexGuard, PoisonError, RwLock,
    RwLockReadGuard, RwLockWriteGuard, TryLockError, TryLockResult, WaitTimeoutResult,
};

/// Hooks for the loom model tests (`--cfg loom` only): the profiler stub's
/// switch, logical clock and totals.
#[cfg(loom)]
#[doc(hidden)]
pub mod __loom {
    use crate::raw::shim::profile as stub;
    use std::sync::atomic::Ordering::SeqCst;

    /// Turns the stub profiler on or off and zeroes its totals.
    pub fn reset(profiling: bool) {
        stub::ON.store(profiling, SeqCst);
        stub::MUTEX_DELAY.store(0, SeqCst);
        stub::MUTEX_EVENTS.store(0, SeqCst);
        stub::BLOCK_EVENTS.store(0, SeqCst);
        stub::PARKS.store(0, SeqCst);
    }

    /// Calls to the parking model's `park` since the last [`reset`].
    pub fn parks() -> u64 {
        stub::PARKS.load(SeqCst)
    }

    /// The logical clock.
    pub fn now() -> u64 {
        stub::now()
    }

    /// (sum of mutex-profile delays, mutex events, block events).
    pub fn totals() -> (u64, u64, u64) {
        (
            stub::MUTEX_DELAY.load(SeqCst),
            stub::MUTEX_EVENTS.load(SeqCst),
            stub::BLOCK_EVENTS.load(SeqCst),
        )
    }
}
