//! Poisoning, as in `std`: the error types are `std`'s own (their
//! constructors are public), so code that matches on
//! `std::sync::TryLockError` keeps compiling.

use crate::raw::shim::{AtomicBool, Ordering::Relaxed};

pub use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult};

/// A lock's poison flag: set when a thread panics while holding the lock.
/// Relaxed, as in `std`: the lock itself orders the data.
pub(crate) struct Flag {
    failed: AtomicBool,
}

/// Whether the thread was already panicking when it took the lock; a guard
/// that is dropped during a panic that started later poisons the lock.
pub(crate) struct Guard {
    panicking: bool,
}

impl Flag {
    crate::raw::const_fn! {
        pub(crate) fn new() -> Flag {
            Flag { failed: AtomicBool::new(false) }
        }
    }

    /// Notes the thread's panic state at lock time, and says whether the lock
    /// is poisoned.
    #[inline]
    pub(crate) fn guard(&self) -> LockResult<Guard> {
        let guard = Guard {
            panicking: std::thread::panicking(),
        };
        if self.get() {
            Err(PoisonError::new(guard))
        } else {
            Ok(guard)
        }
    }

    /// Poisons the lock if the thread started panicking while holding it.
    #[inline]
    pub(crate) fn done(&self, guard: &Guard) {
        if !guard.panicking && std::thread::panicking() {
            self.failed.store(true, Relaxed);
        }
    }

    #[inline]
    pub(crate) fn get(&self) -> bool {
        self.failed.load(Relaxed)
    }

    #[inline]
    pub(crate) fn clear(&self) {
        self.failed.store(false, Relaxed);
    }
}

/// `Ok(f(guard))` or `Err(PoisonError(f(guard)))`.
#[inline]
pub(crate) fn map_result<T, U>(result: LockResult<T>, f: impl FnOnce(T) -> U) -> LockResult<U> {
    match result {
        Ok(t) => Ok(f(t)),
        Err(e) => Err(PoisonError::new(f(e.into_inner()))),
    }
}
