//! The raw condition variable: parking_lot's `Condvar` (a queue keyed by the
//! condvar's address, the waiters' mutex remembered to catch a second mutex)
//! without requeueing: a notified thread is woken and takes the mutex itself,
//! so that its wait for the mutex is a mutex wait of its own in the block
//! profile, as design.md section 3 asks.

use core::hint::black_box;
use core::ptr;
use std::time::Instant;

use super::mutex::{RawMutex, TOKEN_NORMAL};
use super::shim::profile::{self, EventKind, LockSite, StackMark};
use super::shim::{
    self, AtomicPtr, DEFAULT_PARK_TOKEN, FilterOp, Ordering::Relaxed, ParkResult, UnparkResult,
};

/// A condition variable without a site: a pointer to the mutex its waiters
/// use, null while nobody waits.
pub(crate) struct RawCondvar {
    /// The waiters' mutex, or null when the queue is empty. Written only under
    /// the condvar's queue lock (in `validate`, `timed_out` and unpark
    /// callbacks); read Relaxed by `notify_*`'s fast check, which is ordered
    /// after the waiter's store by the mutex the notifier took to change the
    /// condition (the same argument as parking_lot's).
    state: AtomicPtr<RawMutex>,
}

/// How a condvar wait ended.
pub(crate) struct WaitOutcome {
    /// The timeout elapsed before a notification.
    pub(crate) timed_out: bool,
}

impl RawCondvar {
    super::const_fn! {
        pub(crate) fn new() -> RawCondvar {
            RawCondvar { state: AtomicPtr::new(ptr::null_mut()) }
        }
    }

    #[inline]
    fn key(&self) -> usize {
        ptr::from_ref(self) as usize
    }

    /// Wakes one waiter, if any.
    #[inline]
    pub(crate) fn notify_one(&self) {
        if !self.state.load(Relaxed).is_null() {
            self.notify_slow(false);
        }
    }

    /// Wakes every waiter.
    #[inline]
    pub(crate) fn notify_all(&self) {
        if !self.state.load(Relaxed).is_null() {
            self.notify_slow(true);
        }
    }

    #[cold]
    #[inline(never)]
    fn notify_slow(&self, all: bool) {
        let mut first = true;
        let filter = |_| {
            if all || core::mem::take(&mut first) {
                FilterOp::Unpark
            } else {
                FilterOp::Stop
            }
        };
        let callback = |result: UnparkResult| {
            if !result.have_more_threads {
                self.state.store(ptr::null_mut(), Relaxed);
            }
            TOKEN_NORMAL
        };
        // SAFETY: the key is this condvar's address; the closures neither
        // panic nor call into the parking lot.
        unsafe { shim::unpark_filter(self.key(), filter, callback) };
    }

    /// Releases `mutex`, waits for a notification (or `deadline`), and
    /// returns without the mutex: the caller, the public `wait*` method,
    /// re-takes it itself so that its mutex wait is recorded on its own frame.
    ///
    /// Records the condvar wait (`cv_site`) in the block profile, and the
    /// charge of the mutex release (`mutex_site`) in the mutex profile, both
    /// with the mutex released.
    ///
    /// # Panics
    ///
    /// If other threads wait on this condvar with a different mutex; the
    /// mutex is then still held.
    ///
    /// # Safety
    ///
    /// The calling thread holds `mutex`.
    #[cold]
    #[inline(never)]
    pub(crate) unsafe fn wait_slow(
        &self,
        mutex: &RawMutex,
        mutex_site: LockSite,
        cv_site: LockSite,
        deadline: Option<Instant>,
    ) -> WaitOutcome {
        shim::require_may_park("Condvar::wait");
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        let mutex_ptr = ptr::from_ref(mutex).cast_mut();
        let mut bad_mutex = false;
        let mut released = None;
        let block = profile::begin_blocking(EventKind::Condvar, Some(cv_site), 0, mark);
        let validate = || {
            let current = self.state.load(Relaxed);
            if current.is_null() {
                self.state.store(mutex_ptr, Relaxed);
            } else if current != mutex_ptr {
                bad_mutex = true;
                return false;
            }
            true
        };
        let before_sleep = || {
            // We are queued: a notification from now on wakes us. Release the
            // mutex (waking a waiter of it is allowed here); its charge is
            // recorded after the park, because recording may allocate, and
            // an allocator may take a lock that would park this thread a
            // second time.
            // SAFETY: the caller holds `mutex` (our precondition).
            released = unsafe { mutex.unlock_unrecorded() };
        };
        let timed_out = |_, was_last: bool| {
            if was_last {
                self.state.store(ptr::null_mut(), Relaxed);
            }
        };
        // SAFETY: the key is this condvar's address; `validate` and
        // `timed_out` neither panic nor call into the parking lot;
        // `before_sleep` only unparks (the mutex's queue), which is allowed,
        // and neither allocates nor records.
        let result = unsafe {
            shim::park(
                self.key(),
                validate,
                before_sleep,
                timed_out,
                DEFAULT_PARK_TOKEN,
                deadline,
            )
        };
        if let Some(charge) = released {
            profile::record_mutex(
                charge.delay,
                charge.woken,
                EventKind::Mutex,
                Some(mutex_site),
                mark,
            );
        }
        if bad_mutex {
            panic!("attempted to use a condition variable with two mutexes");
        }
        if let Some(start) = block {
            profile::end_blocking(start, EventKind::Condvar, Some(cv_site), mark);
        }
        WaitOutcome {
            timed_out: result == ParkResult::TimedOut,
        }
    }
}
