//! The raw barrier: arrivals are counted under the barrier's queue lock (in
//! `park`'s `validate`), so the count, the generation and the queue change
//! together; the last arrival bumps the generation and wakes the rest.

use core::hint::black_box;
use std::time::Instant;

use super::mutex::TOKEN_NORMAL;
use super::shim::profile::{self, EventKind, LockSite, StackMark};
use super::shim::{
    self, AtomicUsize, DEFAULT_PARK_TOKEN,
    Ordering::{Acquire, Relaxed, Release},
    ParkResult,
};

/// A barrier for `n` threads.
#[doc(hidden)]
pub struct RawBarrier {
    /// Threads that arrived in the current generation. Only touched under the
    /// queue lock (in `validate`), so Relaxed.
    arrived: AtomicUsize,
    /// Bumped (Release, under the queue lock) by each generation's leader;
    /// a woken waiter reads it with Acquire to know it may leave, which also
    /// makes every thread's writes before `wait` visible after it.
    generation: AtomicUsize,
    n: usize,
}

impl RawBarrier {
    crate::const_fn! {
        #[doc(hidden)]
        pub fn new(n: usize) -> RawBarrier {
            RawBarrier { arrived: AtomicUsize::new(0), generation: AtomicUsize::new(0), n }
        }
    }

    #[inline]
    fn key(&self) -> usize {
        core::ptr::from_ref(self) as usize
    }

    /// Waits for the generation's last thread; returns whether this thread
    /// is that last one (the leader). The wait is recorded as a `barrier`
    /// block event labelled `site`.
    #[cold]
    #[inline(never)]
    #[doc(hidden)]
    pub fn wait(&self, site: LockSite) -> bool {
        shim::require_may_park("Barrier::wait");
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        let block = profile::begin_blocking(EventKind::Barrier, Some(site), 0, mark);
        let mut leader = false;
        let mut generation = 0;
        let arrive = || {
            generation = self.generation.load(Relaxed);
            let arrived = self.arrived.load(Relaxed) + 1;
            if arrived >= self.n {
                self.arrived.store(0, Relaxed);
                self.generation.store(generation.wrapping_add(1), Release);
                leader = true;
                return false;
            }
            self.arrived.store(arrived, Relaxed);
            true
        };
        // SAFETY: the key is this barrier's address; `arrive` neither panics
        // nor calls into the parking lot; no timeout.
        let mut result = unsafe {
            shim::park(
                self.key(),
                arrive,
                || {},
                |_, _| {},
                DEFAULT_PARK_TOKEN,
                None::<Instant>,
            )
        };
        if leader {
            // SAFETY: the key is this barrier's address.
            unsafe { shim::unpark_all(self.key(), TOKEN_NORMAL) };
            return true;
        }
        // Woken by our generation's leader. (A leader of the previous
        // generation that is slow to call `unpark_all` can wake us early:
        // park again until our generation is over.)
        while self.generation.load(Acquire) == generation {
            debug_assert!(matches!(
                result,
                ParkResult::Unparked(_) | ParkResult::Invalid
            ));
            let still = || self.generation.load(Relaxed) == generation;
            // SAFETY: as above.
            result = unsafe {
                shim::park(
                    self.key(),
                    still,
                    || {},
                    |_, _| {},
                    DEFAULT_PARK_TOKEN,
                    None::<Instant>,
                )
            };
        }
        if let Some(start) = block {
            profile::end_blocking(start, EventKind::Barrier, Some(site), mark);
        }
        false
    }
}
