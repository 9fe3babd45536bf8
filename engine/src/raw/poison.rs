//! The poison flag a raw lock carries for the `std`-shaped lock around it
//! (kept in the raw lock to share its word): set when a thread panics while
//! holding the lock. The raw lock never reads it; the error types and the
//! rules live in `crate::sync::poison`.

use std::sync::{LockResult, PoisonError};

use super::shim::{AtomicBool, Ordering::Relaxed};

/// A lock's poison flag: set when a thread panics while holding the lock.
/// Relaxed, as in `std`: the lock itself orders the data.
#[doc(hidden)]
pub struct Flag {
    failed: AtomicBool,
}

/// Whether the thread was already panicking when it took the lock; a guard
/// that is dropped during a panic that started later poisons the lock.
#[doc(hidden)]
pub struct Guard {
    panicking: bool,
}

impl Flag {
    crate::const_fn! {
        #[doc(hidden)]
        pub fn new() -> Flag {
            Flag { failed: AtomicBool::new(false) }
        }
    }

    /// Notes the thread's panic state at lock time, and says whether the lock
    /// is poisoned.
    #[inline]
    #[doc(hidden)]
    pub fn guard(&self) -> LockResult<Guard> {
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
    #[doc(hidden)]
    pub fn done(&self, guard: &Guard) {
        if !guard.panicking && std::thread::panicking() {
            self.failed.store(true, Relaxed);
        }
    }

    #[inline]
    #[doc(hidden)]
    pub fn get(&self) -> bool {
        self.failed.load(Relaxed)
    }

    #[inline]
    #[doc(hidden)]
    pub fn clear(&self) {
        self.failed.store(false, Relaxed);
    }
}
