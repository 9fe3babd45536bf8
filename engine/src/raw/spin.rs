//! A lock for a few dozen instructions that never parks and is never
//! profiled: the wait queue of `syncprof::tokio`'s primitives (its queued
//! waiters' ticks), which the profiler must not record and whose release
//! must be cheap. A compare-exchange to take it, a store to release it; a
//! taker that finds it held spins a little, then yields its thread until it
//! is free (so that a holder preempted on a busy machine gets the processor
//! back). `tests/loom_spin.rs` model-checks it (under loom a taker yields at
//! once: spinning adds only interleavings).

use core::cell::UnsafeCell;

use super::shim::{
    AtomicBool,
    Ordering::{Acquire, Relaxed, Release},
};

/// Spins before a taker starts yielding: `std`'s futex mutex's count (see
/// [`hardware`](super::hardware)), ~2.6 µs on the 2-core VM, five cache
/// line transfers: a holder that runs has left its few dozen instructions
/// by then, so one that has not is preempted and the taker yields to it.
#[cfg(not(loom))]
const SPINS: u32 = super::hardware::POLL_PAUSES;

/// The lock and the value it protects.
#[doc(hidden)]
pub struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out `&mut T` to one holder at a time, on any
// thread: `T: Send` suffices (as for `std::sync::Mutex`).
unsafe impl<T: Send> Sync for SpinLock<T> {}

/// The lock held: derefs to the value; releases on drop.
#[doc(hidden)]
pub struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> SpinLock<T> {
    crate::const_fn! {
        #[doc(hidden)]
        pub fn new(value: T) -> SpinLock<T> {
            SpinLock {
                locked: AtomicBool::new(false),
                value: UnsafeCell::new(value),
            }
        }
    }

    /// Takes the lock, spinning and then yielding while it is held.
    #[inline]
    #[doc(hidden)]
    pub fn lock(&self) -> SpinGuard<'_, T> {
        if self
            .locked
            .compare_exchange_weak(false, true, Acquire, Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        SpinGuard { lock: self }
    }

    #[cold]
    fn lock_contended(&self) {
        #[cfg(not(loom))]
        let mut spins = 0u32;
        loop {
            while self.locked.load(Relaxed) {
                #[cfg(not(loom))]
                if spins < SPINS {
                    spins += 1;
                    core::hint::spin_loop();
                    continue;
                }
                super::shim::yield_now();
            }
            if self
                .locked
                .compare_exchange_weak(false, true, Acquire, Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
}

impl<T> core::ops::Deref for SpinGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock: nobody else touches the value.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> core::ops::DerefMut for SpinGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as for `deref`, and the guard is borrowed mutably.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.locked.store(false, Release);
    }
}
