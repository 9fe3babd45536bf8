//! `parking_lot_core` allocates inside `park` and `unpark_*`: it makes
//! its global hash table on first use, grows it (while holding every
//! bucket lock) as threads appear, registers each thread's data, and
//! spills the list of threads to wake to the heap past 8. When the
//! program's `#[global_allocator]` takes a syncprof lock, those
//! allocations re-enter our locks from inside `parking_lot_core`, where
//! this thread may hold a bucket lock and has its `ThreadData` in use:
//! it must neither park nor unpark there.
//!
//! So the shim tracks, per thread, where it is ([`Phase`]):
//!
//! - `Outside`: anything goes.
//! - `Inside` (in a `parking_lot_core` call, its callbacks included): a
//!   lock wait spins (yielding) instead of parking ([`may_park`]), and an
//!   unlock that must wake someone first **releases** the lock, then
//!   notes the queue's key ([`defer_wake`]) to wake when the thread
//!   leaves `parking_lot_core`. No lock is ever held across a deferred
//!   wake, so nothing waits on this thread's own deferral.
//! - `BeforeSleep` (our `before_sleep` callbacks, where `parking_lot_core`
//!   allows unparking but not parking): unlocks wake at once; waits spin.
//!
//! Our own callbacks (`validate`, `before_sleep`, `timed_out`, unpark
//! filters and callbacks) never allocate and never record: they compute,
//! and the profiler runs after `park`/`unpark_*` returns.
//!
//! The deferred keys are kept in a fixed array per thread, deduplicated.
//! Re-entry happens only through the allocations of one `parking_lot_core`
//! call, each of which unlocks the allocator's few locks; a thread that
//! would need more than [`MAX_DEFERRED`] distinct queues woken aborts the
//! process with a message naming the cause, never loses a wake-up.

use core::cell::Cell;
use std::time::Instant;

#[cfg(loom)]
use super::loom_park as backend;
use super::{FilterOp, ParkResult, ParkToken, RequeueOp, UnparkResult, UnparkToken};
#[cfg(loom)]
use loom::thread_local;
#[cfg(not(loom))]
use parking_lot_core as backend;

/// Where a thread stands with respect to `parking_lot_core`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Outside,
    Inside,
    BeforeSleep,
}

/// Distinct queues a thread may have to wake on leaving
/// `parking_lot_core`.
#[doc(hidden)]
pub const MAX_DEFERRED: usize = 16;

/// A wake-up postponed until the thread leaves `parking_lot_core`: the
/// queue's key (never a pointer: the lock may be gone by then, and a wake
/// on a reused address is only a spurious one) and whether to wake every
/// waiter (a reader queue) or one.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Deferred {
    key: usize,
    all: bool,
}

// Loom's `thread_local!` takes no `const` blocks.
#[cfg(not(loom))]
thread_local! {
    /// Where this thread is.
    static PHASE: Cell<Phase> = const { Cell::new(Phase::Outside) };
    /// Postponed wake-ups, in order; `None` marks free entries.
    static DEFERRED: Cell<[Option<Deferred>; MAX_DEFERRED]> =
        const { Cell::new([None; MAX_DEFERRED]) };
}
#[cfg(loom)]
thread_local! {
    static PHASE: Cell<Phase> = Cell::new(Phase::Outside);
    static DEFERRED: Cell<[Option<Deferred>; MAX_DEFERRED]> =
        Cell::new([None; MAX_DEFERRED]);
}

fn phase() -> Phase {
    // During thread-local destruction: outside, as far as we can tell.
    PHASE.try_with(Cell::get).unwrap_or(Phase::Outside)
}

fn set_phase(phase: Phase) {
    let _ = PHASE.try_with(|p| p.set(phase));
}

/// Whether a lock wait may park: `false` inside `parking_lot_core` or one
/// of its callbacks (the wait must spin).
#[inline]
#[doc(hidden)]
pub fn may_park() -> bool {
    phase() == Phase::Outside
}

/// Whether an unlock must postpone its wake-up ([`defer_wake`]): inside a
/// `parking_lot_core` call (but not in a `before_sleep` callback).
#[inline]
#[doc(hidden)]
pub fn must_defer_wake() -> bool {
    phase() == Phase::Inside
}

/// For a primitive that cannot wait without parking (a condition
/// variable, a barrier, a channel): aborts with a message naming it when
/// called inside `parking_lot_core`, e.g. from a global allocator.
#[inline]
#[doc(hidden)]
pub fn require_may_park(primitive: &str) {
    if !may_park() {
        abort_reentry(primitive);
    }
}

#[cold]
fn abort_reentry(what: &str) -> ! {
    // No allocation: a fixed message on stderr, then abort.
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(b"syncprof: ");
    let _ = err.write_all(what.as_bytes());
    let _ = err.write_all(
        b" cannot wait inside parking_lot_core (used from a #[global_allocator]?); \
          only Mutex and RwLock are allocator-safe. Aborting.\n",
    );
    std::process::abort()
}

/// Postpones waking the waiters parked on `key` (`all` of them, or one)
/// until this thread leaves `parking_lot_core`. The caller has already
/// released its lock. Aborts (with a message) rather than lose a wake-up
/// when more than [`MAX_DEFERRED`] distinct queues are pending.
#[doc(hidden)]
pub fn defer_wake(key: usize, all: bool) {
    let work = Deferred { key, all };
    let stored = DEFERRED.try_with(|cell| {
        let mut queue = cell.get();
        if let Some(same) = queue.iter_mut().flatten().find(|d| d.key == key) {
            same.all |= all;
            cell.set(queue);
            return true;
        }
        let Some(free) = queue.iter_mut().find(|slot| slot.is_none()) else {
            return false;
        };
        *free = Some(work);
        cell.set(queue);
        true
    });
    if !matches!(stored, Ok(true)) {
        abort_reentry("an unlock with more queues to wake than the shim can defer");
    }
}

/// Runs the postponed wake-ups; the thread is outside `parking_lot_core`
/// or in a `before_sleep` callback.
fn run_deferred() {
    loop {
        let Ok(next) = DEFERRED.try_with(|cell| {
            let mut queue = cell.get();
            let next = queue[0].take();
            queue.rotate_left(1);
            cell.set(queue);
            next
        }) else {
            return;
        };
        let Some(Deferred { key, all }) = next else {
            return;
        };
        let mut first = true;
        let filter = |_| {
            if all || core::mem::take(&mut first) {
                FilterOp::Unpark
            } else {
                FilterOp::Stop
            }
        };
        // SAFETY: `TOKEN_COMPETE` only asks the woken waiters to compete
        // again, which every waiter of every syncprof queue handles, even
        // one of another lock that reused the address; the closures
        // neither panic nor call into the parking lot.
        unsafe { unpark_filter(key, filter, |_| super::TOKEN_COMPETE) };
    }
}

/// Marks the thread inside `parking_lot_core` while alive; on leaving,
/// restores the phase it found and, unless that was `Inside`, runs what
/// was postponed.
struct Inside {
    outer: Phase,
}

impl Inside {
    #[inline]
    fn enter() -> Inside {
        let outer = phase();
        set_phase(Phase::Inside);
        Inside { outer }
    }
}

impl Drop for Inside {
    #[inline]
    fn drop(&mut self) {
        set_phase(self.outer);
        if self.outer != Phase::Inside {
            run_deferred();
        }
    }
}

/// `parking_lot_core::park`, re-entry aware: only from outside
/// `parking_lot_core` (checked in debug builds); `before_sleep` runs in
/// the `BeforeSleep` phase, after the wake-ups postponed so far.
///
/// # Safety
///
/// As `parking_lot_core::park`.
#[inline]
#[doc(hidden)]
pub unsafe fn park(
    key: usize,
    validate: impl FnOnce() -> bool,
    before_sleep: impl FnOnce(),
    timed_out: impl FnOnce(usize, bool),
    park_token: ParkToken,
    timeout: Option<Instant>,
) -> ParkResult {
    // A real check (a thread-local read, on a path about to sleep): a
    // second park on the same thread would corrupt `parking_lot_core`.
    assert_eq!(
        phase(),
        Phase::Outside,
        "syncprof: park entered from inside parking_lot_core on the same thread"
    );
    let _inside = Inside::enter();
    let before_sleep = || {
        set_phase(Phase::BeforeSleep);
        run_deferred();
        before_sleep();
        set_phase(Phase::Inside);
    };
    // SAFETY: forwarded; the wrapper around `before_sleep` only touches
    // thread-locals and unparks, which `before_sleep` may do.
    unsafe { backend::park(key, validate, before_sleep, timed_out, park_token, timeout) }
}

/// Enters `parking_lot_core` to unpark: never from inside (checked in
/// debug builds; callers check [`must_defer_wake`]).
#[inline]
fn enter_unpark() -> Inside {
    debug_assert_ne!(
        phase(),
        Phase::Inside,
        "syncprof: unpark entered from inside parking_lot_core on the same thread"
    );
    Inside::enter()
}

/// `parking_lot_core::unpark_filter`, re-entry aware: never from inside
/// (checked in debug builds; callers check [`must_defer_wake`]).
///
/// # Safety
///
/// As `parking_lot_core::unpark_filter`.
#[inline]
#[doc(hidden)]
pub unsafe fn unpark_filter(
    key: usize,
    filter: impl FnMut(ParkToken) -> FilterOp,
    callback: impl FnOnce(UnparkResult) -> UnparkToken,
) -> UnparkResult {
    let _inside = enter_unpark();
    // SAFETY: forwarded.
    unsafe { backend::unpark_filter(key, filter, callback) }
}

/// `parking_lot_core::unpark_requeue`, re-entry aware (as
/// [`unpark_filter`]).
///
/// # Safety
///
/// As `parking_lot_core::unpark_requeue`.
#[inline]
#[doc(hidden)]
pub unsafe fn unpark_requeue(
    key_from: usize,
    key_to: usize,
    validate: impl FnOnce() -> RequeueOp,
    callback: impl FnOnce(RequeueOp, UnparkResult) -> UnparkToken,
) -> UnparkResult {
    let _inside = enter_unpark();
    // SAFETY: forwarded.
    unsafe { backend::unpark_requeue(key_from, key_to, validate, callback) }
}

/// `parking_lot_core::unpark_all`, re-entry aware (as [`unpark_filter`]).
///
/// # Safety
///
/// As `parking_lot_core::unpark_all`.
#[inline]
#[doc(hidden)]
pub unsafe fn unpark_all(key: usize, token: UnparkToken) -> usize {
    let _inside = enter_unpark();
    // SAFETY: forwarded.
    unsafe { backend::unpark_all(key, token) }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn phases_nest_and_restore() {
        assert!(may_park() && !must_defer_wake());
        {
            let _a = Inside::enter();
            assert!(!may_park() && must_defer_wake());
            defer_wake(12345, false);
            defer_wake(12345, true);
            let _b = Inside::enter();
            assert!(must_defer_wake());
        }
        assert!(may_park() && !must_defer_wake());
        // The deferral ran (and found nobody parked on the key).
        assert!(DEFERRED.with(Cell::get).iter().all(Option::is_none));
    }
}
